package openaiemu_test

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/llmfleet/llmfleet/openaiemu"
)

// FuzzRequests feeds arbitrary bodies to every endpoint: each gets a 200 or
// a 4xx, never a panic or a 5xx.
func FuzzRequests(f *testing.F) {
	f.Add("/v1/chat/completions", `{"model":"gpt-5","messages":[{"role":"user","content":"hi"}],"stream":true}`)
	f.Add("/v1/responses", `{"model":"o3","input":[{"role":"user","content":[{"type":"input_text","text":"x"}]}],"service_tier":"flex"}`)
	f.Add("/v1/embeddings", `{"model":"m","input":["a","b"]}`)
	s := &openaiemu.Server{}
	f.Fuzz(func(t *testing.T, path, body string) {
		switch path {
		case "/v1/chat/completions", "/v1/responses", "/v1/embeddings":
		default:
			path = "/v1/chat/completions"
		}
		req := httptest.NewRequest("POST", path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer k")
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		if rec.Code != 200 && (rec.Code < 400 || rec.Code >= 500) {
			t.Fatalf("status %d for %q: %s", rec.Code, body, rec.Body)
		}
	})
}
