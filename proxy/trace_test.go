package proxy_test

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/claude"
	"github.com/llmfleet/llmfleet/dispatch"
	"github.com/llmfleet/llmfleet/emulator"
	"github.com/llmfleet/llmfleet/proxy"
)

// tracedStack is the whole llmfleet on loopback (proxy → dispatcher →
// claude.Provider → emulator), its proxy and dispatcher tracing to an
// in-memory exporter, every call priced at a micro-dollar a token.
type tracedStack struct {
	d   *dispatch.Dispatcher
	ts  *httptest.Server
	exp *tracetest.InMemoryExporter
	tp  *sdktrace.TracerProvider
}

// microPrice prices an entry at a micro-dollar a token.
func microPrice(e llmfleet.LedgerEntry) llmfleet.LedgerEntry {
	e.CostUSD, e.Priced = float64(e.Usage.InputTokens+e.Usage.OutputTokens)*1e-6, true
	return e
}

func newTracedStack(t *testing.T) *tracedStack {
	t.Helper()
	quiet := slog.New(slog.DiscardHandler)
	emu := httptest.NewServer(&emulator.Server{Turnaround: func(string, *rand.Rand) time.Duration { return 0 }, Logger: quiet})
	t.Cleanup(emu.Close)
	st := &tracedStack{exp: tracetest.NewInMemoryExporter()}
	st.tp = sdktrace.NewTracerProvider(sdktrace.WithSyncer(st.exp))
	st.d = &dispatch.Dispatcher{
		Providers: []llmfleet.Provider{&claude.Provider{BaseURL: emu.URL, Logger: quiet}},
		Policy: dispatch.Policy{BatchWindow: 5 * time.Millisecond, PollInterval: 2 * time.Millisecond,
			MaxPollInterval: 5 * time.Millisecond, TurnaroundPrior: 20 * time.Millisecond},
		Logger:         quiet,
		Price:          microPrice,
		TracerProvider: st.tp,
	}
	if err := st.d.Open(); err != nil {
		t.Fatal(err)
	}
	up, _ := url.Parse(emu.URL)
	srv := &proxy.Server{Submitter: st.d, Upstream: up, Logger: quiet, PingInterval: time.Millisecond,
		Observe: func(llmfleet.LedgerEntry) {}, TracerProvider: st.tp, TracePrice: microPrice}
	st.ts = httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		st.ts.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		st.d.Close(ctx)
	})
	return st
}

// await returns the ended spans once pred holds of them (the spans of a
// call end as its handler returns, which may be after its caller has
// read its answer).
func (st *tracedStack) await(t *testing.T, pred func(tracetest.SpanStubs) bool) tracetest.SpanStubs {
	t.Helper()
	for range 2000 {
		if spans := st.exp.GetSpans(); pred(spans) {
			return spans
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("spans never came; have %v", names(st.exp.GetSpans()))
	return nil
}

func names(spans tracetest.SpanStubs) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return out
}

// named returns the spans named name.
func named(spans tracetest.SpanStubs, name string) tracetest.SpanStubs {
	var out tracetest.SpanStubs
	for _, s := range spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

func has(name string, n int) func(tracetest.SpanStubs) bool {
	return func(spans tracetest.SpanStubs) bool { return len(named(spans, name)) >= n }
}

// attrs returns a span's attributes by key.
func attrs(s tracetest.SpanStub) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes {
		m[kv.Key] = kv.Value
	}
	return m
}

// wantAttrs checks that span s has the attributes want (as their Emit
// forms).
func wantAttrs(t *testing.T, s tracetest.SpanStub, want map[string]string) {
	t.Helper()
	got := attrs(s)
	for k, v := range want {
		if g, ok := got[attribute.Key(k)]; !ok || g.Emit() != v {
			t.Errorf("span %s: %s = %q (set %v), want %q", s.Name, k, g.Emit(), ok, v)
		}
	}
}

const (
	traceID    = "4bf92f3577b34da6a3ce929d0e0e4736"
	parentSpan = "00f067aa0ba902b7"
)

// callTraced posts a create-message call with a traceparent and the
// budget given ("" for none) and returns its response headers.
func callTraced(t *testing.T, base, text, budget string) http.Header {
	t.Helper()
	hdr := []string{"Traceparent", "00-" + traceID + "-" + parentSpan + "-01"}
	if budget != "" {
		hdr = append(hdr, patient, budget)
	}
	resp := post(t, base+"/v1/messages", string(mustJSON(t, userParams(text))), hdr...)
	body := readAll(t, resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("%s: %d %s", text, resp.StatusCode, body)
	}
	return resp.Header
}

// TestTraceSyncCall: a routed sync call makes one span, a child of the
// caller's traceparent, with the GenAI attributes, its route and budget,
// its usage and its cost.
func TestTraceSyncCall(t *testing.T) {
	st := newTracedStack(t)
	h := callTraced(t, st.ts.URL, "quick", "1000")
	if h.Get("llmfleet-route") != "sync" {
		t.Fatalf("route %q", h.Get("llmfleet-route"))
	}
	spans := st.await(t, has("chat claude-test", 1))
	s := named(spans, "chat claude-test")[0]
	if s.SpanContext.TraceID().String() != traceID || s.Parent.SpanID().String() != parentSpan || !s.Parent.IsRemote() {
		t.Fatalf("traceparent not honoured: trace %s parent %s", s.SpanContext.TraceID(), s.Parent.SpanID())
	}
	if s.SpanKind != trace.SpanKindServer {
		t.Errorf("kind %v", s.SpanKind)
	}
	wantAttrs(t, s, map[string]string{
		"gen_ai.operation.name": "chat", "gen_ai.provider.name": "anthropic", "gen_ai.request.model": "claude-test",
		"llmfleet.route": "sync", "llmfleet.budget_ms": "1000",
	})
	a := attrs(s)
	in, out := a["gen_ai.usage.input_tokens"].AsInt64(), a["gen_ai.usage.output_tokens"].AsInt64()
	if in <= 0 || out <= 0 {
		t.Fatalf("usage %d in, %d out: %v", in, out, s.Attributes)
	}
	if cost := a["llmfleet.cost_usd"].AsFloat64(); cost != float64(in+out)*1e-6 {
		t.Errorf("cost %v, want %v", cost, float64(in+out)*1e-6)
	}
}

// TestTraceBatchedCall: a batched call's span (the proxy's) has its
// batch; the dispatcher's span of the request is its child, with its
// cost and rescue; the batch's create, poll and results spans are linked
// to it.
func TestTraceBatchedCall(t *testing.T) {
	st := newTracedStack(t)
	h := callTraced(t, st.ts.URL, "patient", "600000")
	batchID := h.Get("llmfleet-batch-id")
	if h.Get("llmfleet-route") != "batch" || batchID == "" {
		t.Fatalf("headers %v", h)
	}
	spans := st.await(t, func(s tracetest.SpanStubs) bool {
		return has("chat claude-test", 1)(s) && has("llmfleet.request", 1)(s) && has("llmfleet.batch.results", 1)(s)
	})
	call := named(spans, "chat claude-test")[0]
	if call.SpanContext.TraceID().String() != traceID || call.Parent.SpanID().String() != parentSpan {
		t.Fatalf("traceparent not honoured: %s / %s", call.SpanContext.TraceID(), call.Parent.SpanID())
	}
	wantAttrs(t, call, map[string]string{
		"gen_ai.provider.name": "anthropic", "gen_ai.request.model": "claude-test",
		"llmfleet.route": "batch", "llmfleet.budget_ms": "600000", "llmfleet.batch_id": batchID,
	})
	if attrs(call)["gen_ai.usage.output_tokens"].AsInt64() <= 0 {
		t.Errorf("batched call without usage: %v", call.Attributes)
	}
	req := named(spans, "llmfleet.request")[0]
	if req.Parent.SpanID() != call.SpanContext.SpanID() || req.SpanContext.TraceID() != call.SpanContext.TraceID() {
		t.Fatalf("request span's parent %s, want the call's %s", req.Parent.SpanID(), call.SpanContext.SpanID())
	}
	wantAttrs(t, req, map[string]string{
		"gen_ai.provider.name": "anthropic", "gen_ai.request.model": "claude-test",
		"llmfleet.route": "batch", "llmfleet.batch_id": batchID, "llmfleet.rescue": "false",
	})
	a := attrs(req)
	in, out := a["gen_ai.usage.input_tokens"].AsInt64(), a["gen_ai.usage.output_tokens"].AsInt64()
	if cost := a["llmfleet.cost_usd"].AsFloat64(); in <= 0 || cost != float64(in+out)*1e-6 {
		t.Errorf("request span usage %d/%d cost %v", in, out, cost)
	}
	for _, name := range []string{"llmfleet.batch.create", "llmfleet.batch.poll", "llmfleet.batch.results"} {
		bs := named(spans, name)
		if len(bs) == 0 {
			t.Fatalf("no %s span: %v", name, names(spans))
		}
		s := bs[0]
		if s.Parent.IsValid() {
			t.Errorf("%s has a parent: %v", name, s.Parent)
		}
		if len(s.Links) != 1 || s.Links[0].SpanContext.SpanID() != req.SpanContext.SpanID() {
			t.Errorf("%s links %v, want the request's span", name, s.Links)
		}
		wantAttrs(t, s, map[string]string{"llmfleet.batch_id": batchID, "gen_ai.provider.name": "anthropic"})
	}
}

// TestTraceLibraryCall: Submit's sync route (the library path) makes a
// span of its call, a child of the span in its context.
func TestTraceLibraryCall(t *testing.T) {
	st := newTracedStack(t)
	ctx, parent := st.tp.Tracer("test").Start(context.Background(), "caller")
	body := mustJSON(t, userParams("library"))
	resp, err := st.d.Submit(ctx, 0, &llmfleet.Request{Credential: llmfleet.Credential{APIKey: "sk-test-a"}, Body: body})
	parent.End()
	if err != nil || resp.Route != llmfleet.RouteSync {
		t.Fatalf("%v %+v", err, resp)
	}
	s := named(st.await(t, has("llmfleet.call", 1)), "llmfleet.call")[0]
	if s.Parent.SpanID() != parent.SpanContext().SpanID() || s.SpanKind != trace.SpanKindClient {
		t.Fatalf("parent %s kind %v", s.Parent.SpanID(), s.SpanKind)
	}
	wantAttrs(t, s, map[string]string{"llmfleet.route": "sync", "gen_ai.provider.name": "anthropic", "gen_ai.request.model": "claude-test"})
	if attrs(s)["llmfleet.cost_usd"].AsFloat64() <= 0 {
		t.Errorf("no cost: %v", s.Attributes)
	}
}
