package proxy

import (
	"encoding/json"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
)

// This file holds the pass-through paths of the Anthropic face, which go
// upstream through the forwarder's reverse proxy as they came.

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

// way is the Anthropic face's way upstream: Server.Upstream (else
// DefaultUpstream), its answers read for their usage (usagetap.go).
func (f anthropicFace) way(fw *forwarder) faceWay {
	up := f.s.Upstream
	if up == nil {
		up, _ = url.Parse(DefaultUpstream)
	}
	return faceWay{up: up, rewrite: func(pr *httputil.ProxyRequest) { fw.rewrite(pr, up) },
		modify: func(res *http.Response) error {
			ownAnswer(f.s, res, anthropicAnswerIDs)
			return fw.obs.tapUsage(res)
		}, onError: fw.upstreamError}
}

// answerOwner is the context key of the client a sync call's answer is
// recorded for (proxy-held keys: what it names becomes the client's).
type answerOwner struct{}

// ownAnswer has what a 200 answer names (as its face's ids reads it)
// recorded as its client's as it passes, with proxy-held keys
// (ownerBook.ownedAnswer): a sync call's, or an object of the client's
// read by id. The client is the request's answerOwner, if any.
func ownAnswer(s *Server, res *http.Response, ids func([]byte) []string) {
	ctx := res.Request.Context()
	if client, _ := ctx.Value(answerOwner{}).(string); client != "" && res.StatusCode == http.StatusOK {
		if read, ok := ctx.Value(answerIDs{}).(func([]byte) []string); ok {
			ids = read
		}
		res.Body = bookOf(s).ownedAnswer(ctx, client, res, ids)
	}
}

// answerIDs is the context key of how the answer of a request with an
// answerOwner names what becomes the client's, where not as its face's
// answers do (a list of a response's input items: listIDs).
type answerIDs struct{}

// listIDs returns the ids of a list's items ({"object": "list", "data":
// [{"id": ...}, ...]}).
func listIDs(data []byte) []string {
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	json.Unmarshal(data, &list)
	ids := make([]string, 0, len(list.Data))
	for _, it := range list.Data {
		ids = append(ids, it.ID)
	}
	return ids
}

// upstream is the Anthropic face's reverse proxy.
func (f anthropicFace) upstream() http.Handler { return f.s.fwd.to("").rp }
