package dispatch

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/llmfleet/llmfleet"
)

// traced returns a tracer provider exporting to an in-memory exporter,
// synchronously (no goroutine of its own: fit for synctest).
func traced() (*sdktrace.TracerProvider, *tracetest.InMemoryExporter) {
	exp := tracetest.NewInMemoryExporter()
	return sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp)), exp
}

func spansNamed(exp *tracetest.InMemoryExporter, name string) tracetest.SpanStubs {
	var out tracetest.SpanStubs
	for _, s := range exp.GetSpans() {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

func spanAttr(s tracetest.SpanStub, k string) attribute.Value {
	for _, kv := range s.Attributes {
		if string(kv.Key) == k {
			return kv.Value
		}
	}
	return attribute.Value{}
}

// TestTraceBatchSpansLinked: two requests pooled in one batch each get
// their span, a child of their caller's, ended (through the outbox) by
// the time the caller is answered; the batch's create, poll and results
// spans are roots linked to both.
func TestTraceBatchSpansLinked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tp, exp := traced()
		f := newFake()
		d := &Dispatcher{Providers: []llmfleet.Provider{f}, Policy: Policy{BatchMinSize: 2}, TracerProvider: tp}
		if err := d.Open(); err != nil {
			t.Fatal(err)
		}
		defer d.Close(t.Context())
		ctx, caller := tp.Tracer("test").Start(t.Context(), "caller")
		var wg sync.WaitGroup
		for _, p := range []string{"a", "b"} {
			wg.Go(func() {
				if _, err := d.SubmitBatch(ctx, time.Hour, req("k", p)); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		caller.End()
		reqs := spansNamed(exp, "llmfleet.request")
		if len(reqs) != 2 {
			t.Fatalf("%d request spans", len(reqs))
		}
		ids := map[trace.SpanID]bool{}
		for _, s := range reqs {
			ids[s.SpanContext.SpanID()] = true
			if s.Parent.SpanID() != caller.SpanContext().SpanID() {
				t.Errorf("request span's parent %s", s.Parent.SpanID())
			}
			if spanAttr(s, "llmfleet.route").AsString() != "batch" || spanAttr(s, "llmfleet.batch_id").AsString() == "" ||
				spanAttr(s, "llmfleet.budget_ms").AsInt64() != 3600000 || spanAttr(s, "gen_ai.request.model").AsString() != "m1" {
				t.Errorf("request span attributes %v", s.Attributes)
			}
		}
		for _, name := range []string{"llmfleet.batch.create", "llmfleet.batch.poll", "llmfleet.batch.results"} {
			bs := spansNamed(exp, name)
			if len(bs) == 0 {
				t.Fatalf("no %s span", name)
			}
			s := bs[0]
			if s.Parent.IsValid() || len(s.Links) != 2 || !ids[s.Links[0].SpanContext.SpanID()] || !ids[s.Links[1].SpanContext.SpanID()] {
				t.Errorf("%s: parent %v links %v", name, s.Parent, s.Links)
			}
		}
	})
}

// TestTraceRescue: a request a rescue answered says so on its span,
// with the sync route its answer took.
func TestTraceRescue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tp, exp := traced()
		f := newFake()
		f.turnaround = func(string) time.Duration { return 30 * time.Minute } // a straggler
		d := &Dispatcher{Providers: []llmfleet.Provider{f}, TracerProvider: tp,
			Policy: Policy{BatchMinSize: 1, SyncLatencyPrior: 20 * time.Second, RescueMargin: 2 * time.Second}}
		if err := d.Open(); err != nil {
			t.Fatal(err)
		}
		defer d.Close(t.Context())
		resp, err := d.SubmitBatch(context.Background(), 10*time.Minute, req("k", "late"))
		if err != nil || resp.Route != llmfleet.RouteSync {
			t.Fatalf("%v %+v", err, resp)
		}
		reqs := spansNamed(exp, "llmfleet.request")
		if len(reqs) != 1 {
			t.Fatalf("%d request spans", len(reqs))
		}
		s := reqs[0]
		if !spanAttr(s, "llmfleet.rescue").AsBool() || spanAttr(s, "llmfleet.route").AsString() != "sync" {
			t.Errorf("rescued request span %v", s.Attributes)
		}
	})
}

// TestTraceLibraryFlex: Submit's flex route (the library path) makes a
// span of its call, a child of its caller's, with the flex route and
// the cost of its ledger entry.
func TestTraceLibraryFlex(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tp, exp := traced()
		d := &Dispatcher{Providers: []llmfleet.Provider{newFake()}, TracerProvider: tp, Policy: Policy{BatchMinSize: 1},
			Flex: func(provider, model string) bool { return true },
			Price: func(e llmfleet.LedgerEntry) llmfleet.LedgerEntry {
				e.CostUSD, e.Priced = 0.25, true
				return e
			}}
		if err := d.Open(); err != nil {
			t.Fatal(err)
		}
		defer d.Close(t.Context())
		ctx, caller := tp.Tracer("test").Start(t.Context(), "caller")
		resp, err := d.Submit(ctx, time.Hour, req("k", "a"))
		caller.End()
		if err != nil || resp.Route != llmfleet.RouteFlex {
			t.Fatalf("%v %+v", err, resp)
		}
		calls := spansNamed(exp, "llmfleet.call")
		if len(calls) != 1 {
			t.Fatalf("%d call spans", len(calls))
		}
		s := calls[0]
		if s.Parent.SpanID() != caller.SpanContext().SpanID() || spanAttr(s, "llmfleet.route").AsString() != "flex" ||
			spanAttr(s, "llmfleet.cost_usd").AsFloat64() != 0.25 || spanAttr(s, "gen_ai.provider.name").AsString() != "fake" {
			t.Errorf("flex call span: parent %s, %v", s.Parent.SpanID(), s.Attributes)
		}
	})
}
