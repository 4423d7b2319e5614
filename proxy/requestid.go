package proxy

import (
	"net/http"
	"strings"
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

// isGeminiRouted reports whether path, with or without a /budget/<ms>
// prefix, is one of the Gemini face's routed methods (generateContent,
// streamGenerateContent), whose access lines name route, model, budget
// and request id as the other faces' routed calls do.
func isGeminiRouted(path string) bool {
	if rest, ok := strings.CutPrefix(path, "/budget/"); ok {
		_, path, _ = strings.Cut(rest, "/")
		path = "/" + path
	}
	p, ok := strings.CutPrefix(path, GeminiPrefix)
	return ok && geminiFace{}.routed(http.MethodPost, p)
}
