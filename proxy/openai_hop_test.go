package proxy_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/llmfleet/llmfleet/proxy"
)

// TestOpenAISyncHopByHop: a sync call of the OpenAI face goes through the
// reverse proxy, which drops the hop-by-hop headers both ways (Keep-Alive,
// TE, Proxy-Connection, a header Connection names) and llmfleet's own,
// and passes the others on.
func TestOpenAISyncHopByHop(t *testing.T) {
	var mu sync.Mutex
	var got http.Header
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = r.Header.Clone()
		mu.Unlock()
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Connection", "X-Up-Hop")
		w.Header().Set("X-Up-Hop", "1")
		w.Header().Set("Keep-Alive", "timeout=5")
		w.Header().Set("X-Up-End", "2")
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c1","object":"chat.completion","model":"gpt-4.1","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	ps := httptest.NewServer((&proxy.Server{OpenAIUpstream: u}).Handler())
	defer ps.Close()

	req, _ := http.NewRequest("POST", ps.URL+"/openai/v1/chat/completions", strings.NewReader(`{"model":"gpt-4.1","messages":[]}`))
	req.Header.Set("Authorization", "Bearer sk-a")
	req.Header.Set("Connection", "X-Hop")
	req.Header.Set("X-Hop", "dropped")
	req.Header.Set("Keep-Alive", "timeout=5")
	req.Header.Set("Te", "gzip")
	req.Header.Set("Proxy-Connection", "keep-alive")
	req.Header.Set("X-End", "kept")
	req.Header.Set("Llmfleet-Route", "sync")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Llmfleet-Route") != "sync" {
		t.Fatalf("status %d, route %q", resp.StatusCode, resp.Header.Get("Llmfleet-Route"))
	}
	mu.Lock()
	defer mu.Unlock()
	for _, h := range []string{"X-Hop", "Keep-Alive", "Te", "Proxy-Connection", "Llmfleet-Route"} {
		if v := got.Get(h); v != "" {
			t.Errorf("%s: %q went upstream", h, v)
		}
	}
	if got.Get("X-End") != "kept" || got.Get("Authorization") != "Bearer sk-a" {
		t.Errorf("end-to-end headers upstream: %v", got)
	}
	if resp.Header.Get("X-Up-Hop") != "" || resp.Header.Get("Keep-Alive") != "" || resp.Header.Get("X-Up-End") != "2" {
		t.Errorf("answer's headers: %v", resp.Header)
	}
}
