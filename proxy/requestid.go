package proxy

import (
	"net/http"
)

// upstreamRequestID returns the id the upstream gave an answer whose
// headers are h: Anthropic's request-id, else OpenAI's x-request-id
// (which the OpenAI face passes on, streamed or not); "" for none.
func upstreamRequestID(h http.Header) string {
	if id := h.Get("Request-Id"); id != "" {
		return id
	}
	return h.Get("X-Request-Id")
}
