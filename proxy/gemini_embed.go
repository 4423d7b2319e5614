package proxy

import (
	"context"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/llmfleet/llmfleet"
)

// This file ledgers the Gemini face's embeddings (embedContent,
// batchEmbedContents), which pass through: the upstream bills their input
// tokens, and their answers report none, so each answered call has its
// input estimated from its body (LedgerEntry.Estimated).

// embedCall is the context key of an embeddings call's upstream request:
// what its entry needs of the call as it came in.
type embedCall struct{}

// embedding is an embeddings call as it came in: its client and model,
// when, and its body's bytes, counted as they go upstream (its length may
// not be given).
type embedding struct {
	client, model string
	arrived       time.Time
	sent          *atomic.Int64
}

// markEmbedding readies out, the upstream request of in, for embedded if
// it is an embeddings call.
func (g geminiForwarder) markEmbedding(in, out *http.Request) *http.Request {
	model, method, ok := geminiMethod(in.URL.Path)
	if !ok || in.Method != http.MethodPost || method != "embedContent" && method != "batchEmbedContents" || out.Body == nil {
		return out
	}
	sent := new(atomic.Int64)
	out.Body = countedBody{ReadCloser: out.Body, n: sent}
	e := embedding{client: g.s.clientOf(geminiCredential(in)), model: model, arrived: g.s.clock.Now(), sent: sent}
	return out.WithContext(context.WithValue(out.Context(), embedCall{}, e))
}

// embedded hands Observe the entry of an embeddings call answered 200
// (resp), its input estimated from the bytes of its body.
func (g geminiForwarder) embedded(resp *http.Response) {
	e, ok := resp.Request.Context().Value(embedCall{}).(embedding)
	if !ok || resp.StatusCode != http.StatusOK || g.s.Observe == nil {
		return
	}
	now := g.s.clock.Now()
	g.s.fwd.obs.observe(llmfleet.LedgerEntry{Time: now, Provider: geminiProvider, Model: e.model, Route: llmfleet.RouteSync,
		Tier: llmfleet.TierStandard, Outcome: "ok", Latency: now.Sub(e.arrived), Client: e.client, BudgetMet: true,
		Usage: llmfleet.EstimatedUsage(e.sent.Load()), Estimated: true})
}
