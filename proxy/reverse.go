package proxy

import (
	"net/http"
	"net/http/httputil"
	"strings"
	"sync"

	"github.com/llmfleet/llmfleet"
)

// This file holds what goes upstream through the reverse proxy as it
// came: the pass-through paths, and how an upstream request is prepared
// and its failure answered (the sync route's calls go this way too).

// anthropicShared reports whether a pass-through call may go upstream
// under a key every client shares: reads of the models and token counts.
// Everything else the API keeps under a key (files, skills, ...) would
// show one client what another made; Message Batches are served by owner
// (anthropicFace.serveBatches). The Anthropic face's pass-through paths
// are served by mount (mount.go).
func anthropicShared(method, path string) bool {
	switch {
	case method == http.MethodGet:
		return path == "/v1/models" || strings.HasPrefix(path, "/v1/models/")
	case method == http.MethodPost:
		return path == "/v1/messages/count_tokens"
	}
	return false
}

// rewrite prepares an upstream request of the reverse proxy.
func (s *Server) rewrite(pr *httputil.ProxyRequest) {
	pr.SetURL(s.upstream)
	for k := range pr.Out.Header {
		if len(k) >= 9 && strings.EqualFold(k[:9], "llmfleet-") {
			delete(pr.Out.Header, k)
		}
	}
	if c, ok := pr.In.Context().Value(upstreamCredential{}).(llmfleet.Credential); ok {
		setCredential(pr.Out.Header, c)
	}
	prepareObserved(pr)
}

// upstreamError answers a request whose upstream call failed.
//
// The answer closes the connection: the request body may be left unread
// (a call refused at the dial never reads it), and net/http, in the full
// duplex mode the streaming routes use (fullDuplex), panics with "invalid
// concurrent Body.Read call" when it reads the next request of a
// connection whose handler left its body so.
func (s *Server) upstreamError(w http.ResponseWriter, r *http.Request, err error) {
	w.Header().Set("Connection", "close")
	if sc := syncCallOf(r); sc != nil {
		if state := sc.bound.cutBy(); state == callCutHard || state == callCutTimeout {
			s.callCut(w, r, sc, state, true)
			return
		}
	}
	if bodyTimedOut(r) {
		s.observeFailure(r)
		writeAPIError(w, bodyTooSlow)
		return
	}
	s.observeFailure(r)
	if r.Context().Err() != nil {
		return // the client left
	}
	s.log.Warn("upstream call failed", "path", r.URL.Path, "err", err)
	writeAPIError(w, &apiError{http.StatusBadGateway, "api_error", "llmfleet could not reach the upstream API"})
}

// bufferPool recycles the copy buffers of the reverse proxy. It pools
// *[32 KiB]byte: a pointer to an array converts to and from a slice
// without a new allocation at each Put (as &buf of a slice would be).
type bufferPool struct{ p sync.Pool }

// copyBuffer is the size of a copy buffer, as ReverseProxy's own.
const copyBuffer = 32 << 10

func (b *bufferPool) Get() []byte {
	if v, ok := b.p.Get().(*[copyBuffer]byte); ok {
		return v[:]
	}
	return new([copyBuffer]byte)[:]
}

func (b *bufferPool) Put(buf []byte) {
	if cap(buf) < copyBuffer {
		return
	}
	b.p.Put((*[copyBuffer]byte)(buf[:copyBuffer]))
}
