package proxy

import (
	"context"
	"net/http"
	"strings"

	"github.com/llmfleet/llmfleet"
)

// mountedFace is a face served under a path prefix of its own (the OpenAI
// face under OpenAIPrefix): besides its part of the pipeline, its
// pass-through rules and its way upstream. The faces are mounted in
// Server.init (Server.faces).
type mountedFace interface {
	face
	// prefix returns the path prefix the face is served under and the
	// prefix of its API's paths after it ("/openai", "/v1/").
	prefix() (mount, api string)
	// hold returns, in proxy-held-key mode, the upstream credential of the
	// client presenting presented, or the refusal (the face holds no key,
	// the key is unknown).
	hold(presented llmfleet.Credential) (llmfleet.Credential, *refusal)
	// forCall returns the face for a call to path (the API's) by the
	// client named client ("" without proxy-held keys).
	forCall(path, client string) mountedFace
	// routed reports whether a call of method to path goes through the
	// routed-call pipeline.
	routed(method, path string) bool
	// owned reports whether path is of an API whose objects the face
	// keeps by owner in proxy-held-key mode, served by serveOwned.
	owned(path string) bool
	serveOwned(w http.ResponseWriter, r *http.Request)
	// shared reports whether a pass-through call may go upstream, in
	// proxy-held-key mode, under the key every client shares.
	shared(method, path string) bool
	// refs adds the objects obj, one object of a call's body at any
	// depth, names by id (heldrefs.go), and returns which of its members'
	// values name nothing (nil: all may).
	refs(obj []byte, add func(objectRef)) (skip func([]byte) bool)
	// way returns what the forwarder needs to pass the face's calls on
	// (its upstream, the hooks of its reverse proxy), once, at mount.
	way(f *forwarder) faceWay
	// upstream passes a call on to the face's upstream, through the
	// reverse proxy the forwarder built of its way.
	upstream() http.Handler
}

// holdWith maps, in proxy-held-key mode, the key a client presented to
// the upstream one hook (the face's Server.*Credentials hook) holds for
// it, or returns f's refusal: the face is closed without a hook, the key
// is unknown to it.
func holdWith(f face, hook func(llmfleet.Credential) (llmfleet.Credential, bool), presented llmfleet.Credential) (llmfleet.Credential, *refusal) {
	if hook == nil {
		return llmfleet.Credential{}, f.says(faceClosed, "")
	}
	up, ok := hook(presented)
	if !ok {
		return up, f.says(unknownKey, "")
	}
	return up, nil
}

// mount serves the paths of a face under its prefix: with proxy-held keys
// the client is admitted by its key first; routed calls go through the
// pipeline; the rest passes upstream, with proxy-held keys only the
// face's owned APIs (by owner) and what every client may share.
type mount struct {
	s *Server
	f mountedFace
}

// serve serves a request under the face's prefix.
func (m mount) serve(w http.ResponseWriter, r *http.Request) {
	s := m.s
	prefix, api := m.f.prefix()
	path, ok := strings.CutPrefix(r.URL.Path, prefix)
	if !ok || !strings.HasPrefix(path, api) {
		m.f.refuse(w, m.f.says(unknownPath, r.Method+" "+r.URL.Path))
		return
	}
	client := ""
	if s.Credentials != nil {
		presented := m.f.traits().key.read(r)
		up, e := m.f.hold(presented)
		if e != nil {
			m.f.refuse(w, e)
			return
		}
		client = s.ownerName(presented)
		r = r.WithContext(context.WithValue(r.Context(), upstreamCredential{}, up))
	}
	f := m.f.forCall(path, client)
	if f.routed(r.Method, path) {
		pipeline{s, f}.serve(w, r)
		return
	}
	r2 := r
	if prefix != "" {
		r2 = withPath(r, path, "")
	}
	if s.Credentials != nil {
		if e := passLimit(s, f, r, path); e != nil {
			f.refuse(w, e)
			return
		}
		switch {
		case f.owned(path):
			f.serveOwned(w, r2)
			return
		case !f.shared(r.Method, path):
			f.refuse(w, f.says(notShared, r.Method+" "+path))
			return
		case r.Method == http.MethodPost:
			// A shared call (count tokens, embed) must not name what
			// another client made either.
			if e := s.refsOfBody(r2, f, client); e != nil {
				f.refuse(w, e)
				return
			}
		}
	}
	fullDuplex(w)
	f.upstream().ServeHTTP(w, r2)
}

// The faces of the proxy.
var (
	_ mountedFace = anthropicFace{}
	_ mountedFace = openAIFace{}
)
