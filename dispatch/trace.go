package dispatch

import (
	"context"
	"iter"
	"maps"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/internal/genaiattr"
)

// This file makes the engine's spans (Dispatcher.TracerProvider):
//
//   - llmfleet.request: one per batched request, from its acceptance to
//     its answer, a child of its caller's span (the proxy's, or the
//     library caller's), with the route its answer took, its batch, its
//     usage and cost (its ledger entry's), and whether a rescue answered
//     it;
//   - llmfleet.call: one per call of the sync or flex route made through
//     Submit (the library path), a child of its caller's span;
//   - llmfleet.batch.create, llmfleet.batch.poll, llmfleet.batch.results:
//     the provider calls of a batch's life, each the root of a trace of
//     its own, linked to the spans of the requests it carries.
//
// Spans start and end outside the engine's lock: an end decided under it
// goes through its outbox (engineLock.later), as every hook does.

// TracerName is the instrumentation scope of the dispatcher's spans.
const TracerName = "github.com/llmfleet/llmfleet/dispatch"

// engineTracer makes the engine's spans; its zero value makes none.
type engineTracer struct {
	t trace.Tracer // nil: no spans
}

// newEngineTracer returns the tracer of tp (nil: none).
func newEngineTracer(tp trace.TracerProvider) engineTracer {
	if tp == nil {
		return engineTracer{}
	}
	return engineTracer{t: tp.Tracer(TracerName)}
}

// requestAttrs are the attributes a request's span starts with.
func requestAttrs(p llmfleet.Provider, model string, route llmfleet.Route, budget time.Duration) trace.SpanStartOption {
	return trace.WithAttributes(
		genaiattr.ProviderName.String(genaiattr.Provider(p.Name())),
		genaiattr.RequestModel.String(model),
		genaiattr.Route.String(string(route)),
		genaiattr.BudgetMS.Int64(budget.Milliseconds()))
}

// request starts the span of batched request w accepted from ctx; nil
// when spans are off or not recorded.
func (et engineTracer) request(ctx context.Context, w *waiter) trace.Span {
	if et.t == nil {
		return nil
	}
	_, span := et.t.Start(ctx, "llmfleet.request",
		requestAttrs(w.prov, w.info.Model, llmfleet.RouteBatch, w.budget),
		trace.WithAttributes(attribute.String("llmfleet.request_id", w.id)))
	if !span.IsRecording() {
		return nil
	}
	return span
}

// endRefused ends the span of a request that was not accepted: an error,
// but for one attached to the same request accepted by another call.
func endRefused(span trace.Span, err error, attached bool) {
	if span == nil {
		return
	}
	if attached {
		span.SetAttributes(attribute.Bool("llmfleet.attached", true))
	} else {
		failSpan(span, err)
	}
	span.End()
}

// finishLocked queues the end of w's span with its answer: its ledger
// entry e (nil for an answer that concludes nothing) or err.
func (et engineTracer) finishLocked(l *engineLock, w *waiter, err error, e *llmfleet.LedgerEntry) {
	span := w.span
	if span == nil {
		return
	}
	var entry llmfleet.LedgerEntry
	if e != nil {
		entry = *e
	}
	l.later(func() {
		if e != nil {
			entrySpan(span, &entry)
		}
		if err != nil {
			failSpan(span, err)
		}
		span.End()
	})
}

// entrySpan records a priced ledger entry on its request's span.
func entrySpan(span trace.Span, e *llmfleet.LedgerEntry) {
	attrs := []attribute.KeyValue{
		genaiattr.Route.String(string(e.Route)),
		genaiattr.Rescue.Bool(e.Rescue == llmfleet.RescueSync),
	}
	attrs = append(attrs, genaiattr.Usage(e.Usage)...)
	if e.Model != "" {
		attrs = append(attrs, genaiattr.ResponseModel.String(e.Model))
	}
	if e.BatchID != "" {
		attrs = append(attrs, genaiattr.BatchID.String(e.BatchID))
	}
	if e.Priced {
		attrs = append(attrs, genaiattr.CostUSD.Float64(e.CostUSD))
	}
	span.SetAttributes(attrs...)
}

// failSpan marks span failed with err.
func failSpan(span trace.Span, err error) {
	span.RecordError(err)
	span.SetStatus(codes.Error, err.Error())
	span.SetAttributes(attribute.String("error.type", llmfleet.Outcome(err)))
}

// call starts the span of a call of the library path sent on route
// (Submit's sync or flex route); nil when spans are off or not recorded.
func (et engineTracer) call(ctx context.Context, p llmfleet.Provider, req *llmfleet.Request, route llmfleet.Route, budget time.Duration) trace.Span {
	if et.t == nil {
		return nil
	}
	info, _ := p.Inspect(req)
	_, span := et.t.Start(ctx, "llmfleet.call", trace.WithSpanKind(trace.SpanKindClient),
		requestAttrs(p, info.Model, route, budget))
	if !span.IsRecording() {
		return nil
	}
	return span
}

// called ends the span of a call on route with its answer, priced by
// price.
func called(span trace.Span, p llmfleet.Provider, route llmfleet.Route, resp *llmfleet.Response, err error, price func(llmfleet.LedgerEntry) llmfleet.LedgerEntry) {
	if span == nil {
		return
	}
	if err != nil {
		failSpan(span, err)
	} else {
		e := price(llmfleet.LedgerEntry{Provider: p.Name(), Model: resp.Model, Route: route,
			Outcome: "ok", Usage: resp.Usage, Tier: resp.Tier})
		entrySpan(span, &e)
	}
	span.End()
}

// waiterLinks returns links to the spans of the requests ws yields
// (slices.Values, maps.Values).
func waiterLinks(ws iter.Seq[*waiter]) []trace.Link {
	var links []trace.Link
	for w := range ws {
		if w.span != nil {
			links = append(links, trace.Link{SpanContext: w.span.SpanContext()})
		}
	}
	return links
}

// batch starts a span of a batch's life (create, poll, results), the
// root of a trace of its own linked to the spans of its requests; a
// no-op span when spans are off.
func (et engineTracer) batch(ctx context.Context, name string, p llmfleet.Provider, links []trace.Link, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if et.t == nil {
		return ctx, trace.SpanFromContext(context.Background()) // a no-op span
	}
	attrs = append(attrs, genaiattr.ProviderName.String(genaiattr.Provider(p.Name())))
	return et.t.Start(ctx, "llmfleet.batch."+name, trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindClient),
		trace.WithLinks(links...), trace.WithAttributes(attrs...))
}

// endBatch ends a span of a batch's life, failed with err if not nil.
func endBatch(span trace.Span, err error, attrs ...attribute.KeyValue) {
	span.SetAttributes(attrs...)
	if err != nil {
		failSpan(span, err)
	}
	span.End()
}

// batchSize is the attribute counting a batch's requests.
func batchSize(n int) attribute.KeyValue { return attribute.Int("llmfleet.batch_size", n) }

// createdID is the attribute naming the batch a create made, if any.
func createdID(b *llmfleet.Batch) []attribute.KeyValue {
	if b == nil {
		return nil
	}
	return []attribute.KeyValue{genaiattr.BatchID.String(b.ID)}
}

// linksLocked returns links to the spans of the requests of the
// tracker's flights open.
func (t *tracker) linksLocked(open []string) []trace.Link {
	var links []trace.Link
	for _, id := range open {
		if f := t.flights[id]; f != nil {
			links = append(links, waiterLinks(maps.Values(f.waiters))...)
		}
	}
	return links
}

// poll starts the span of a poll of the batches open (none: no span).
func (et engineTracer) poll(ctx context.Context, p llmfleet.Provider, open []string, links []trace.Link) (context.Context, trace.Span) {
	if len(open) == 0 {
		return ctx, trace.SpanFromContext(context.Background()) // no call: no span
	}
	attrs := []attribute.KeyValue{attribute.StringSlice("llmfleet.batch_ids", open)}
	if len(open) == 1 {
		attrs = append(attrs, genaiattr.BatchID.String(open[0]))
	}
	return et.batch(ctx, "poll", p, links, attrs...)
}

// polled ends the span of a poll with what it saw: the batches ended,
// and the error of a status call that failed, if any.
func polled(span trace.Span, seen map[string]*llmfleet.Batch, failed map[string]error) {
	ended := 0
	for _, b := range seen {
		if b.Status == llmfleet.BatchEnded {
			ended++
		}
	}
	var err error
	for _, e := range failed {
		err = e
		break
	}
	endBatch(span, err, attribute.Int("llmfleet.batches_ended", ended))
}
