package proxy

import (
	"net/http"
	"strings"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/internal/genaiattr"
)

// This file makes the span of a routed call (Server.TracerProvider): one
// per call the pipeline serves, a child of the caller's traceparent
// (W3C trace context), with the GenAI semantic conventions' attributes
// and llmfleet's own. The span rides in the request's context, so that
// the Submitter's spans of a batched call (the dispatcher's) are its
// children and its batch's spans link to them.

// TracerName is the instrumentation scope of the proxy's spans.
const TracerName = "github.com/llmfleet/llmfleet/proxy"

// spanTracer is the Server's tracer of routed calls; nil tracer: none.
type spanTracer struct {
	tracer trace.Tracer
	price  func(llmfleet.LedgerEntry) llmfleet.LedgerEntry
}

// newSpanTracer returns the tracer of s's routed calls: off without a
// TracerProvider, or with OpenTelemetry's no-op one (whose spans would
// neither record nor be sent anywhere: a call's traceparent goes upstream
// as its other headers do).
func newSpanTracer(s *Server) spanTracer {
	switch s.TracerProvider.(type) {
	case nil, noop.TracerProvider, *noop.TracerProvider:
		return spanTracer{}
	}
	return spanTracer{tracer: s.TracerProvider.Tracer(TracerName), price: s.TracePrice}
}

// callSpan is the span of one routed call; its methods do nothing on a
// nil one (tracing off).
type callSpan struct {
	span   trace.Span
	price  func(llmfleet.LedgerEntry) llmfleet.LedgerEntry
	op     string
	named  bool // the span's name has its model
	once   sync.Once
	parked bool // the answer is written by a parked connection, which ends it
}

// start starts the span of a routed call of face f, a child of the
// trace context r carries (traceparent), and returns r with it in its
// context. Off, it returns r and nil.
func (t spanTracer) start(r *http.Request, f face) (*http.Request, *callSpan) {
	if t.tracer == nil {
		return r, nil
	}
	ctx := propagation.TraceContext{}.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
	provider, op := faceGenAI(f, r.URL.Path)
	ctx, span := t.tracer.Start(ctx, op, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(genaiattr.OperationName.String(op), genaiattr.ProviderName.String(provider)))
	if !span.IsRecording() {
		return r.WithContext(ctx), nil // sampled out: the context still carries the trace on
	}
	return r.WithContext(ctx), &callSpan{span: span, price: t.price, op: op}
}

// faceGenAI returns the GenAI provider name and operation of a call to
// face f at path.
func faceGenAI(f face, path string) (provider, op string) {
	switch f.(type) {
	case openAIFace:
		if strings.HasSuffix(path, "/embeddings") {
			return "openai", "embeddings"
		}
		return "openai", "chat"
	case geminiFace:
		return "gcp.gemini", "generate_content"
	}
	return "anthropic", "chat"
}

// planned records what planning the call found: its route, budget, model
// and request id, or the refusal it got.
func (cs *callSpan) planned(c *call, e *refusal) {
	if cs == nil {
		return
	}
	attrs := []attribute.KeyValue{genaiattr.Route.String(string(c.route)), genaiattr.BudgetMS.Int64(c.budget.Milliseconds())}
	model := c.model
	if model == "" {
		body := c.body
		if body == nil && c.req != nil {
			body = c.req.Body
		}
		if body != nil {
			model = modelOf(body)
		}
	}
	if model != "" {
		attrs = append(attrs, genaiattr.RequestModel.String(model))
		cs.name(model)
	}
	if c.req != nil && c.req.ID != "" {
		attrs = append(attrs, attribute.String("llmfleet.request_id", c.req.ID))
	}
	cs.span.SetAttributes(attrs...)
	if e != nil {
		cs.span.SetAttributes(attribute.String("error.type", e.typ))
		cs.span.SetStatus(codes.Error, e.msg)
	}
}

// name names the span after its operation and model, once.
func (cs *callSpan) name(model string) {
	if !cs.named {
		cs.named = true
		cs.span.SetName(cs.op + " " + model)
	}
}

// entry records the ledger entry of a sync (or flex) call: its usage,
// the model that answered, its outcome and its cost (priced with
// Server.TracePrice, if set).
func (cs *callSpan) entry(e *llmfleet.LedgerEntry) {
	if cs == nil {
		return
	}
	attrs := genaiattr.Usage(e.Usage)
	if e.Model != "" {
		attrs = append(attrs, genaiattr.ResponseModel.String(e.Model))
		cs.name(e.Model) // a call whose body was not read: the model that answered
	}
	if cs.price != nil {
		if p := cs.price(*e); p.Priced {
			attrs = append(attrs, genaiattr.CostUSD.Float64(p.CostUSD))
		}
	}
	cs.span.SetAttributes(attrs...)
	if e.Outcome != "ok" && e.Outcome != "" {
		cs.span.SetAttributes(attribute.String("error.type", e.Outcome))
		cs.span.SetStatus(codes.Error, e.Outcome)
	}
}

// answered records the Submitter's answer to a batched call: the batch
// that answered it, its usage and model, or its error. Its cost is on the
// Submitter's span of the request (the one whose ledger entry it is).
func (cs *callSpan) answered(resp *llmfleet.Response, err error) {
	if cs == nil {
		return
	}
	if err != nil {
		cs.span.RecordError(err)
		cs.span.SetStatus(codes.Error, err.Error())
		return
	}
	if resp == nil {
		return
	}
	attrs := genaiattr.Usage(resp.Usage)
	if resp.Model != "" {
		attrs = append(attrs, genaiattr.ResponseModel.String(resp.Model))
	}
	if resp.BatchID != "" {
		attrs = append(attrs, genaiattr.BatchID.String(resp.BatchID))
	}
	cs.span.SetAttributes(attrs...)
}

// park hands the end of the span to the parked connection that answers.
func (cs *callSpan) park() {
	if cs != nil {
		cs.parked = true
	}
}

// done ends the span when the handler returns, unless a parked
// connection answers the call.
func (cs *callSpan) done() {
	if cs != nil && !cs.parked {
		cs.end()
	}
}

// end ends the span, once.
func (cs *callSpan) end() {
	if cs != nil {
		cs.once.Do(func() { cs.span.End() })
	}
}
