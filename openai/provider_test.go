package openai_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/dispatch"
	"github.com/llmfleet/llmfleet/openai"
	"github.com/llmfleet/llmfleet/openaiemu"
	"github.com/llmfleet/llmfleet/pricing"
)

func chat(model, prompt string) []byte {
	return []byte(`{"model":"` + model + `","messages":[{"role":"user","content":"` + prompt + `"}]}`)
}

func emulate(t *testing.T, emu *openaiemu.Server) *openai.Provider {
	t.Helper()
	srv := httptest.NewServer(emu)
	t.Cleanup(srv.Close)
	return &openai.Provider{BaseURL: srv.URL}
}

// TestSend: the three routed endpoints over loopback, with usage, model
// and tier read off the answer; an error answer in the API's envelope.
func TestSend(t *testing.T) {
	emu := &openaiemu.Server{}
	p := emulate(t, emu)
	cred := llmfleet.Credential{APIKey: "sk-a"}
	resp, err := p.Send(t.Context(), &llmfleet.Request{Credential: cred, Body: chat("gpt-4.1", "hello there")})
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Model == "" || resp.Usage.InputTokens == 0 || resp.Usage.OutputTokens == 0 || resp.Tier != llmfleet.TierStandard {
		t.Fatalf("chat: %+v", resp)
	}
	resp, err = p.Send(t.Context(), &llmfleet.Request{Credential: cred, Endpoint: "/v1/embeddings",
		Body: []byte(`{"model":"text-embedding-3-small","input":"some words here"}`)})
	if err != nil || resp.Usage.InputTokens == 0 || resp.Usage.OutputTokens != 0 {
		t.Fatalf("embeddings: %+v, %v", resp, err)
	}
	resp, err = p.Send(t.Context(), &llmfleet.Request{Credential: cred, Endpoint: "/v1/responses",
		Body: []byte(`{"model":"o4-mini","input":"hi"}`)})
	if err != nil || resp.Usage.OutputTokens == 0 {
		t.Fatalf("responses: %+v, %v", resp, err)
	}
	_, err = p.Send(t.Context(), &llmfleet.Request{Body: chat("gpt-4.1", "no key")})
	var pe *llmfleet.Error
	if !errors.As(err, &pe) || pe.StatusCode != http.StatusUnauthorized || len(pe.Body) == 0 {
		t.Fatalf("no key: %v", err)
	}
	if _, err := p.Send(t.Context(), &llmfleet.Request{Credential: cred, Endpoint: "/v1/files", Body: []byte(`{}`)}); err == nil {
		t.Fatal("an endpoint llmfleet does not route was called")
	}
}

// TestFlexErrors: the two flex refusals are told apart.
func TestFlexErrors(t *testing.T) {
	emu := &openaiemu.Server{FlexUnavailable: func(string) bool { return true }}
	p := emulate(t, emu)
	cred := llmfleet.Credential{APIKey: "sk-a"}
	_, err := p.Send(t.Context(), &llmfleet.Request{Credential: cred, Flex: true, Body: chat(openaiemu.DefaultFlexModels[0], "x")})
	if !errors.Is(err, llmfleet.ErrFlexUnavailable) {
		t.Fatalf("capacity refusal: %v", err)
	}
	_, err = p.Send(t.Context(), &llmfleet.Request{Credential: cred, Flex: true, Body: chat("gpt-4.1", "x")})
	if !errors.Is(err, llmfleet.ErrFlexUnsupported) {
		t.Fatalf("tier refusal: %v", err)
	}
	if s := emu.Stats(); len(s.Billed) != 0 {
		t.Fatalf("refusals billed: %v", s.Billed)
	}
}

// TestEngineFlexOverLoopback: the engine routes an OpenAI request with a
// patient budget to flex (the price table's word), retries the capacity
// refusals and is served flex; a model the API refuses flex for goes
// standard at once; each prompt is billed once.
func TestEngineFlexOverLoopback(t *testing.T) {
	var refusals atomic.Int32
	refusals.Store(2)
	flexModel := openaiemu.DefaultFlexModels[0]
	emu := &openaiemu.Server{FlexUnavailable: func(string) bool { return refusals.Add(-1) >= 0 }}
	p := emulate(t, emu)
	table := pricing.Default()
	d := &dispatch.Dispatcher{Providers: []llmfleet.Provider{p}, Flex: table.Flex,
		Policy: dispatch.Policy{FlexRetryBackoff: time.Millisecond, FlexLatencyPrior: time.Second, SyncLatencyPrior: time.Second}}
	if err := d.Open(); err != nil {
		t.Fatal(err)
	}
	defer d.Close(context.Background())
	if !table.Flex("openai", flexModel) {
		t.Fatalf("the price table gives %s no flex tier", flexModel)
	}
	cred := llmfleet.Credential{APIKey: "sk-a"}
	resp, err := d.Submit(t.Context(), 10*time.Minute, &llmfleet.Request{Provider: "openai", Credential: cred, Body: chat(flexModel, "flex me")})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Route != llmfleet.RouteFlex || resp.Tier != llmfleet.TierFlex {
		t.Fatalf("route %s tier %s", resp.Route, resp.Tier)
	}
	s := emu.Stats()
	if s.FlexRefused != 2 || s.Billed["flex me"] != 1 {
		t.Fatalf("emulator: %d refused, billed %v", s.FlexRefused, s.Billed)
	}
	resp, err = d.SubmitFlex(t.Context(), 10*time.Minute, &llmfleet.Request{Provider: "openai", Credential: cred, Body: chat("gpt-4.1", "no flex here")})
	if err != nil || resp.Tier != llmfleet.TierStandard || emu.Stats().Billed["no flex here"] != 1 {
		t.Fatalf("a model without flex: %+v, %v", resp, err)
	}
	if st := d.Stats(); st.FlexCalls != 2 || st.FlexFallbacks != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// TestInspect: requests of different endpoints, models, organizations or
// projects never share a pool; batch params lose the stream and the tier.
func TestInspect(t *testing.T) {
	p := &openai.Provider{}
	key := func(ep, project string, body []byte) string {
		h := http.Header{}
		if project != "" {
			h.Set("OpenAI-Project", project)
		}
		info, err := p.Inspect(&llmfleet.Request{Endpoint: ep, Header: h, Body: body})
		if err != nil {
			t.Fatal(err)
		}
		return info.PoolKey
	}
	a := key("", "", chat("gpt-4.1", "x"))
	if a != key("/v1/chat/completions", "", chat("gpt-4.1", "y")) {
		t.Error("the default endpoint is not chat completions")
	}
	for _, other := range []string{key("", "proj_b", chat("gpt-4.1", "x")), key("", "", chat("o3", "x")),
		key("/v1/responses", "", chat("gpt-4.1", "x"))} {
		if other == a {
			t.Errorf("pool key %q shared", a)
		}
	}
	if _, err := p.Inspect(&llmfleet.Request{Body: []byte(`{"messages":[]}`)}); err == nil {
		t.Error("a request without a model was inspected")
	}
	params, err := p.BatchParams(&llmfleet.Request{Body: []byte(`{"model":"m","stream":true,"stream_options":{"include_usage":true},"service_tier":"flex","n":1}`)})
	if err != nil || string(params) != `{"model":"m","n":1}` {
		t.Fatalf("BatchParams = %s, %v", params, err)
	}
}

// TestSendHeaders: a request's provider headers go upstream, llmfleet's
// own (the proxy's name of its client) never do.
func TestSendHeaders(t *testing.T) {
	var got http.Header
	emu := &openaiemu.Server{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		emu.ServeHTTP(w, r)
	}))
	defer srv.Close()
	p := &openai.Provider{BaseURL: srv.URL}
	_, err := p.Send(context.Background(), &llmfleet.Request{Credential: llmfleet.Credential{APIKey: "sk-a"}, Body: chat("gpt-4.1", "hi"),
		Header: http.Header{"Openai-Project": {"proj"}, "Llmfleet-Client": {"alice"}}})
	if err != nil {
		t.Fatal(err)
	}
	if got.Get("OpenAI-Project") != "proj" || got.Get("Llmfleet-Client") != "" {
		t.Errorf("upstream headers %v", got)
	}
}
