package proxy_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/proxy"
)

// BenchmarkOpenAISyncPath is the OpenAI face's sync route, observed (the
// ledger's tap on), against a bare upstream.
func BenchmarkOpenAISyncPath(b *testing.B) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c1","object":"chat.completion","created":1,"model":"gpt-4.1","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"ok"}}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	ps := httptest.NewServer((&proxy.Server{OpenAIUpstream: u, Observe: func(llmfleet.LedgerEntry) {}}).Handler())
	defer ps.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	body := `{"model":"gpt-4.1","messages":[{"role":"user","content":"hi"}]}`
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req, _ := http.NewRequest("POST", ps.URL+"/openai/v1/chat/completions", strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer sk-bench")
			resp, err := client.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	})
}
