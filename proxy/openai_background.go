package proxy

import (
	"context"
	"net/http"
	"strings"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/openaiwire"
	"github.com/llmfleet/llmfleet/sse"
)

// This file ledgers the OpenAI face's background responses (a
// /v1/responses call with background: true). Such a call is answered at
// once, queued, with no usage; the response runs on upstream and is
// billed when it ends. Its entry is handed to Observe when its end is
// read through the proxy (a read of the response by its id, polled as the
// SDKs poll, or streamed), once: the first reader claims it.

// backgroundReader is the context key of a read of a response by its id:
// the name of the client reading it, whose entry its end is.
type backgroundReader struct{}

// responseRead reports whether a request of method to path (the API's)
// reads a response by its id.
func responseRead(method, path string) bool {
	id, ok := strings.CutPrefix(path, "/v1/responses/")
	return ok && method == http.MethodGet && strings.HasPrefix(id, "resp_") && !strings.Contains(id, "/")
}

// markResponseRead readies out, the upstream request of in, a read of a
// response by its id, for backgroundEnd: its answer plain, its reader
// named.
func (f *forwarder) markResponseRead(in, out *http.Request) *http.Request {
	out.Header.Del("Accept-Encoding") // read here: plain, please
	return out.WithContext(context.WithValue(out.Context(), backgroundReader{}, f.s.clientOf(headerCredential(in))))
}

// backgroundEnd has the end of a background response ledgered as res, the
// 200 answer to a read of it by its id (markResponseRead), passes: a JSON
// response read whole, a stream's events each as they end.
func (f *forwarder) backgroundEnd(res *http.Response) {
	client, ok := res.Request.Context().Value(backgroundReader{}).(string)
	if !ok || res.StatusCode != http.StatusOK || f.obs.observe == nil {
		return
	}
	ctx := context.WithoutCancel(res.Request.Context())
	read := func(data []byte) {
		if a, err := openaiwire.ReadStreamEvent(data); err == nil && a.Ended() && bookOf(f.s).claimOnce(ctx, ledgeredKey(a.ID)) {
			f.obs.backgroundEnded(client, a)
		}
	}
	if strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		res.Body = &tappedBody{body: res.Body, tap: &sse.Decoder{MaxData: maxStreamEvent, Emit: func(e sse.Event) { read(e.Data) }}}
		return
	}
	res.Body = &wholeBody{body: res.Body, done: read}
}

// ledgeredKey is the name under which the ledgering of the background
// response id is claimed (ownerBook.claimOnce).
func ledgeredKey(id string) string { return "ledgered/" + id }

// claimOnce reports whether this call is the first to claim key: the
// first record of a key is kept (BatchOwners), so a claim is a record of
// a token of its own, read back. Replicas sharing the store claim alike.
func (b ownerBook) claimOnce(ctx context.Context, key string) bool {
	token := llmfleet.NewID("claim_")
	if err := b.store.RecordBatchOwner(ctx, key, token); err != nil {
		b.log.Warn("background response's end not ledgered: its claim failed", "key", key, "err", err)
		return false
	}
	owner, err := b.store.BatchOwner(ctx, key)
	return err == nil && owner == token
}

// backgroundEnded hands Observe the entry of a background response that
// ended (a), read by the client named client: billed for its usage in
// the tier it was served in, as a sync (or flex) call.
func (o *syncObserver) backgroundEnded(client string, a openaiwire.Answer) {
	e := llmfleet.LedgerEntry{Time: o.clock.Now(), Provider: openAIProvider, Model: a.Model, Route: llmfleet.RouteSync,
		Tier: a.Tier, Outcome: "ok", Usage: a.Usage, Client: client, RequestID: a.ID, BudgetMet: true}
	if e.Tier == "" {
		e.Tier = llmfleet.TierStandard
	}
	if e.Tier == llmfleet.TierFlex {
		e.Route = llmfleet.RouteFlex
	}
	if a.Status == "failed" || a.Status == "cancelled" {
		e.Outcome = a.Status
	}
	o.observe(e)
}
