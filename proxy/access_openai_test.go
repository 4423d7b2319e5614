package proxy_test

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/openaiemu"
	"github.com/llmfleet/llmfleet/proxy"
)

// TestAccessOpenAIStreamsRequestID: the access line of a streamed OpenAI
// call carries its request id like the others: a /v1/responses stream
// whose budget plans it batched (taken sync: only chat streams are
// synthesised from a batch) the upstream's x-request-id, a batched chat
// stream llmfleet's id, each as the caller's headers give it.
func TestAccessOpenAIStreamsRequestID(t *testing.T) {
	emu := &openaiemu.Server{BatchTurnaround: 30 * time.Millisecond}
	d, u := openAIEngine(t, emu)
	got := make(chan proxy.Access, 4)
	srv := &proxy.Server{Submitter: d, OpenAIUpstream: u, Observe: func(llmfleet.LedgerEntry) {}, PingInterval: 10 * time.Millisecond,
		Access: func(a proxy.Access) { got <- a }}
	ps := httptest.NewServer(srv.Handler())
	t.Cleanup(ps.Close)
	for _, c := range []struct {
		path, body, route, idHeader string
	}{
		{"/openai/v1/responses", `{"model":"gpt-4.1","stream":true,"input":"a patient stream"}`, "sync", "X-Request-Id"},
		{"/openai/v1/chat/completions", `{"model":"gpt-4.1","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"a batched stream"}]}`,
			"batch", "Llmfleet-Request-Id"},
	} {
		resp := post(t, ps.URL+c.path, c.body, "Authorization", "Bearer sk-a", "Llmfleet-Latency-Budget-Ms", "3600000")
		body := readAll(t, resp.Body)
		if resp.StatusCode != 200 || !strings.Contains(body, "a patient stream") && !strings.Contains(body, "a batched stream") {
			t.Fatalf("%s: %d %s", c.path, resp.StatusCode, body)
		}
		a := oneAccess(t, got)
		id := resp.Header.Get(c.idHeader)
		if id == "" || a.RequestID != id || string(a.Route) != c.route || !a.Messages {
			t.Errorf("%s: access %+v; want route %s, request id %q (%s)", c.path, a, c.route, id, c.idHeader)
		}
	}
}

// TestAccessGeminiRouted: a routed call of the Gemini face has an access
// line like the other faces' routed calls: route, model, budget, and the
// label of the key presented as the Gemini API takes it (x-goog-api-key,
// ?key=).
func TestAccessGeminiRouted(t *testing.T) {
	u := streamReplay(t, geminiStream())
	got := make(chan proxy.Access, 4)
	srv := &proxy.Server{GeminiUpstream: u, Observe: func(llmfleet.LedgerEntry) {}, Access: func(a proxy.Access) { got <- a },
		Fingerprint: func(c llmfleet.Credential) string { return "label-" + c.APIKey }}
	ps := httptest.NewServer(srv.Handler())
	t.Cleanup(ps.Close)
	resp := post(t, ps.URL+"/budget/0/gemini/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
		`{"contents":[{"role":"user","parts":[{"text":"Hi"}]}]}`, "X-Goog-Api-Key", "AIza-test")
	readAll(t, resp.Body)
	a := oneAccess(t, got)
	if !a.Messages || a.Route != llmfleet.RouteSync || a.Model != "gemini-2.5-flash" || a.Status != 200 || a.Key != "label-AIza-test" {
		t.Errorf("access %+v", a)
	}
	resp = post(t, ps.URL+"/gemini/v1beta/models?key=AIza-query", "", "Content-Type", "application/json")
	readAll(t, resp.Body)
	if a := oneAccess(t, got); a.Messages || a.Key != "label-AIza-query" {
		t.Errorf("a pass-through call as a routed one, or its ?key= not named: %+v", a)
	}
}
