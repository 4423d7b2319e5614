package proxy_test

import (
	"net/http"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/geminiemu"
	"github.com/llmfleet/llmfleet/proxy"
)

// TestGeminiFaceV1: the Go SDK set to APIVersion "v1" (the default of
// @google/genai 3.x) works through the face on every route: sync and
// streamed calls go upstream under /v1, flex too, a batched call (and a
// batched stream) through Batch Mode; a pass-through read of a model
// under /v1 reaches the upstream; each prompt is billed once.
func TestGeminiFaceV1(t *testing.T) {
	st := newGeminiStack(t, &geminiemu.Server{Keys: []string{"k1"}}, nil)
	ctx := t.Context()
	v1 := func(h http.Header) *genai.Client {
		c, err := genai.NewClient(ctx, &genai.ClientConfig{APIKey: "k1", Backend: genai.BackendGeminiAPI, HTTPClient: st.ts.Client(),
			HTTPOptions: genai.HTTPOptions{BaseURL: st.ts.URL + proxy.GeminiPrefix, APIVersion: "v1", Headers: h}})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	for _, route := range []string{"sync", "flex", "batch"} {
		cl := v1(http.Header{proxy.HeaderRoute: {route}, proxy.HeaderBudget: {"3600000"}})
		prompt := "v1 " + route
		resp, err := cl.Models.GenerateContent(ctx, "gemini-2.5-flash", genai.Text(prompt), nil)
		if err != nil {
			t.Fatalf("%s: %v", route, err)
		}
		if resp.Text() != "Answer to: "+prompt || resp.SDKHTTPResponse.Headers.Get(proxy.HeaderRoute) != route {
			t.Errorf("%s: %q, route %q", route, resp.Text(), resp.SDKHTTPResponse.Headers.Get(proxy.HeaderRoute))
		}
		var text strings.Builder
		for chunk, err := range cl.Models.GenerateContentStream(ctx, "gemini-2.5-flash", genai.Text(prompt+" streamed"), nil) {
			if err != nil {
				t.Fatalf("%s stream: %v", route, err)
			}
			text.WriteString(chunk.Text())
		}
		if text.String() != "Answer to: "+prompt+" streamed" {
			t.Errorf("%s stream: %q", route, text.String())
		}
	}
	m, err := v1(nil).Models.Get(ctx, "gemini-2.5-flash", nil)
	if err != nil || !strings.HasSuffix(m.Name, "gemini-2.5-flash") {
		t.Fatalf("model read under /v1: %v %+v", err, m)
	}
	reqs := st.emu.Stats().Requests
	for _, p := range []string{"/v1/models/gemini-2.5-flash:generateContent", "/v1/models/gemini-2.5-flash:streamGenerateContent", "/v1/models/gemini-2.5-flash"} {
		if reqs[p] == 0 {
			t.Errorf("nothing reached %s upstream: %v", p, reqs)
		}
	}
	for p, n := range st.emu.Stats().Billed {
		if n != 1 {
			t.Errorf("%q billed %d times", p, n)
		}
	}
	for _, e := range st.ledger() {
		if e.Provider != "gemini" || e.Outcome != "ok" || e.Usage.OutputTokens == 0 {
			t.Errorf("ledger entry %+v", e)
		}
		if e.Route == llmfleet.RouteFlex && e.Tier != llmfleet.TierFlex {
			t.Errorf("flex entry's tier %q", e.Tier)
		}
	}
}
