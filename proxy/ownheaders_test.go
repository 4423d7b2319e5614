package proxy_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go/v3"
	oaioption "github.com/openai/openai-go/v3/option"

	"github.com/llmfleet/llmfleet/dispatch"
	"github.com/llmfleet/llmfleet/geminiemu"
	"github.com/llmfleet/llmfleet/openaiemu"
)

// knownHeaders is how a refusal of an unknown llmfleet-* header names
// the known ones.
const knownHeaders = "its headers are llmfleet-latency-budget-ms, llmfleet-route and llmfleet-deadline"

// A misspelt budget header (llmfleet-latency-budget, without -ms) is a
// 400 in each face's envelope naming the known headers, not a call
// silently left without its budget; nothing is sent.
func TestUnknownOwnHeaderRefused(t *testing.T) {
	ctx := context.Background()
	st := newStack(t, dispatch.Policy{})
	client := newClient(st.ts.URL, optHeader("llmfleet-latency-budget", "600000"))
	_, err := client.Messages.New(ctx, userParams("hello"))
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.StatusCode != 400 || !strings.Contains(ae.RawJSON(), `"type":"invalid_request_error"`) ||
		!strings.Contains(ae.RawJSON(), "no request header llmfleet-latency-budget; "+knownHeaders) {
		t.Errorf("Anthropic face: %v", err)
	}

	base := openAIFace(t, &openaiemu.Server{}, nil)
	oc := openai.NewClient(oaioption.WithBaseURL(base+"/openai/v1"), oaioption.WithAPIKey("sk-a"), oaioption.WithMaxRetries(0),
		oaioption.WithHeader("llmfleet-latency-budget", "600000"))
	_, err = oc.Chat.Completions.New(ctx, ask("hello"))
	var oe *openai.Error
	if !errors.As(err, &oe) || oe.StatusCode != 400 || oe.Param != "llmfleet-latency-budget" || !strings.Contains(oe.Message, knownHeaders) {
		t.Errorf("OpenAI face: %v", err)
	}

	gs := newGeminiStack(t, &geminiemu.Server{}, nil)
	req, _ := http.NewRequest("POST", gs.ts.URL+"/gemini/v1beta/models/gemini-2.5-flash:generateContent",
		strings.NewReader(`{"contents":[{"role":"user","parts":[{"text":"hello"}]}]}`))
	req.Header.Set("x-goog-api-key", "g-key")
	req.Header.Set("content-type", "application/json")
	req.Header.Set("llmfleet-latency-budget", "600000")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(body), `"status": "INVALID_ARGUMENT"`) && !strings.Contains(string(body), `"status":"INVALID_ARGUMENT"`) ||
		!strings.Contains(string(body), knownHeaders) {
		t.Errorf("Gemini face: %d %s", resp.StatusCode, body)
	}
	if n := st.calls(); n != 0 {
		t.Errorf("%d calls upstream", n)
	}
}

// calls counts the calls of any kind the stack's emulator took.
func (st *stack) calls() int {
	n := 0
	for _, c := range st.emu.Stats().Calls {
		n += c
	}
	return n
}

// A call that goes sync for its budget says why in llmfleet-route-reason,
// whether the budget came in the header or the /budget/<ms>/ path: none
// given, or one at or under the sync ceiling (5 s by default). A budget
// the dispatcher weighs, or a forced route, carries no such reason.
func TestRouteReason(t *testing.T) {
	ctx := context.Background()
	st := newStack(t, dispatch.Policy{})
	ceiling := "is at or under the sync ceiling of 5000 ms (serve --sync-max-latency)"
	for _, c := range []struct {
		base string
		hdr  []string
		want string
	}{
		{st.ts.URL, nil, "no latency budget"},
		{st.ts.URL, []string{"llmfleet-latency-budget-ms", "3000"}, "the latency budget of 3000 ms " + ceiling},
		{st.ts.URL + "/budget/3000", nil, "the latency budget of 3000 ms " + ceiling},
		{st.ts.URL + "/budget/3000", []string{"llmfleet-route", "sync"}, ""},
		{st.ts.URL + "/budget/600000", nil, ""},
	} {
		var raw *http.Response
		opts := []option.RequestOption{optResponse(&raw)}
		if c.hdr != nil {
			opts = append(opts, optHeader(c.hdr[0], c.hdr[1]))
		}
		client := newClient(c.base)
		if _, err := client.Messages.New(ctx, userParams("why sync"), opts...); err != nil {
			t.Fatalf("%s %v: %v", c.base, c.hdr, err)
		}
		got := raw.Header.Get("llmfleet-route-reason")
		if c.want == "" && got != "" || c.want != "" && !strings.HasPrefix(got, c.want) {
			t.Errorf("%s %v: route %s, reason %q; want %q", c.base, c.hdr, raw.Header.Get("llmfleet-route"), got, c.want)
		}
	}

	// The OpenAI face, the budget in the path.
	base := openAIFace(t, &openaiemu.Server{}, nil)
	var raw *http.Response
	oc := sdk(base+"/budget/2000/openai/v1", "sk-a")
	if _, err := oc.Chat.Completions.New(ctx, ask("why sync"), oaioption.WithResponseInto(&raw)); err != nil {
		t.Fatal(err)
	}
	if got := raw.Header.Get("llmfleet-route-reason"); !strings.HasPrefix(got, "the latency budget of 2000 ms "+ceiling) {
		t.Errorf("OpenAI face under /budget/2000: reason %q", got)
	}
}
