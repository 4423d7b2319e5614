package proxy

import (
	"context"
	"net/http"
	"strings"
)

// This file holds the pass-through paths of the Anthropic face, which go
// upstream through the forwarder's reverse proxy as they came.

// servePassThrough passes a request upstream unchanged, apart from the
// credential in proxy-held-key mode and the proxy's own headers.
func (s *Server) servePassThrough(w http.ResponseWriter, r *http.Request) {
	if s.Credentials != nil {
		presented := credentialFrom(r.Header)
		c, ok := s.Credentials(presented)
		if !ok {
			writeAPIError(w, unauthorized)
			return
		}
		r = r.WithContext(context.WithValue(r.Context(), upstreamCredential{}, c))
		if isBatchesPath(r.URL.Path) {
			s.serveBatches(w, r, s.ownerName(presented))
			return
		}
		if !anthropicShared(r.Method, r.URL.Path) {
			writeAPIError(w, &apiError{http.StatusForbidden, "permission_error", "This llmfleet holds one key for all its clients: " +
				r.Method + " " + r.URL.Path + " would reach what other clients made under it, so it is not passed on."})
			return
		}
	}
	fullDuplex(w)
	s.rp.ServeHTTP(w, r)
}

// anthropicShared reports whether a pass-through call may go upstream
// under a key every client shares: reads of the models and token counts.
// Everything else the API keeps under a key (files, skills, ...) would
// show one client what another made; Message Batches are served by owner
// (serveBatches).
func anthropicShared(method, path string) bool {
	switch {
	case method == http.MethodGet:
		return path == "/v1/models" || strings.HasPrefix(path, "/v1/models/")
	case method == http.MethodPost:
		return path == "/v1/messages/count_tokens"
	}
	return false
}
