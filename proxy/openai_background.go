package proxy

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/openaiwire"
	"github.com/llmfleet/llmfleet/sse"
)

// This file ledgers the OpenAI face's background responses (a
// /v1/responses call with background: true). Such a call is answered at
// once, queued, with no usage; the response runs on upstream and is
// billed when it ends. Its entry is handed to Observe when its end passes
// through the proxy (a read of the response by its id, polled as the SDKs
// poll, or streamed; its cancel; a call continuing from it, for which the
// proxy reads it: settleChained), once: the first to see it claims it,
// and the entry is the client's that made it (made).

// backgroundReader is the context key of a read of a response by its id:
// the name of the client reading it, whose entry its end is.
type backgroundReader struct{}

// responseRead reports whether a request of method to path (the API's)
// reads a response by its id: a GET of it, or its cancel, which answers
// it as it ended.
func responseRead(method, path string) bool {
	id, ok := strings.CutPrefix(path, "/v1/responses/")
	if !ok || !strings.HasPrefix(id, "resp_") {
		return false
	}
	id, cancel := strings.CutSuffix(id, "/cancel")
	return !strings.Contains(id, "/") && (method == http.MethodGet && !cancel || method == http.MethodPost && cancel)
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
		a, err := openaiwire.ReadStreamEvent(data)
		if err != nil || !a.Ended() || !bookOf(f.s).claimOnce(ctx, ledgeredKey(a.ID)) {
			return
		}
		made := bookOf(f.s).madeBy(ctx, a.ID)
		if made.client != "" {
			client = made.client
		}
		f.obs.backgroundEnded(client, a, made.bodyBytes)
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

// ledgered reports whether the end of the background response id has
// been claimed, so ledgered.
func (b ownerBook) ledgered(ctx context.Context, id string) bool {
	_, err := b.store.BatchOwner(ctx, ledgeredKey(id))
	return err == nil
}

// backgroundMade is what the proxy keeps of a background response as its
// create is answered queued: the client that made it, whose entry its end
// is, and the size of its request body, whose input is estimated from it
// if its end reports no usage.
type backgroundMade struct {
	client    string
	bodyBytes int
}

// made records, once, who made the background response id, with a body
// of bodyBytes (in the owners store, as the claims are: shared by
// replicas).
func (b ownerBook) made(ctx context.Context, id string, m backgroundMade) {
	if err := b.store.RecordBatchOwner(ctx, "made/"+id, strconv.Itoa(m.bodyBytes)+" "+m.client); err != nil {
		b.log.Warn("background response's maker not recorded: its end is ledgered to its reader", "id", id, "err", err)
	}
}

// madeBy returns what made recorded of the background response id (zero
// if nothing).
func (b ownerBook) madeBy(ctx context.Context, id string) backgroundMade {
	v, err := b.store.BatchOwner(ctx, "made/"+id)
	if err != nil {
		return backgroundMade{}
	}
	n, client, _ := strings.Cut(v, " ")
	bytes, _ := strconv.Atoi(n)
	return backgroundMade{client: client, bodyBytes: bytes}
}

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
// ended (a), made by (or else read by) the client named client: billed
// for its usage in the tier it was served in, as a sync (or flex) call;
// an end that reports no usage (a cancelled one may not) has its input
// estimated from its create's body of bodyBytes (LedgerEntry.Estimated).
func (o *syncObserver) backgroundEnded(client string, a openaiwire.Answer, bodyBytes int) {
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
	if e.Usage == (llmfleet.Usage{}) {
		e.Usage, e.Estimated = llmfleet.EstimatedUsage(int64(bodyBytes)), true
	}
	o.observe(e)
}

// settleChained ledgers the end of each background response made through
// the proxy that r, an admitted /v1/responses call of the OpenAI face of
// s (its way upstream up; its body body), continues from (previous_response_id) and that no read has
// ledgered yet: a client may use a background response's output so,
// without reading it. The proxy reads it first, as a read by its id goes
// (with r's credential, through up, where backgroundEnd ledgers its end),
// within settleWait.
func settleChained(s *Server, up http.Handler, r *http.Request, body []byte) {
	if s.Observe == nil {
		return
	}
	ids, _ := memberStrings(body, []string{"previous_response_id"})
	book := bookOf(s)
	for _, id := range ids {
		if !strings.HasPrefix(id, "resp_") || book.ledgered(r.Context(), id) || book.madeBy(r.Context(), id).client == "" {
			continue // no background response made here, or ledgered already
		}
		ctx, cancel := context.WithTimeout(r.Context(), settleWait)
		res := serveInProcess(getOf(ctx, r, "/v1/responses/"+url.PathEscape(id), ""), up.ServeHTTP)
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		cancel()
	}
}

// settleWait bounds the read of a background response a call continues
// from (settleChained): a wait llmfleet adds to the call.
const settleWait = 3 * time.Second

// ledgeredElsewhere reports whether t, the answer (or the stream, whole
// or broken off) to the sync call oc, is a background response's whose
// entry is not the call's to hand on: one that runs on (its maker
// recorded, for its end: backgroundEnd), or one whose end, which the
// answer carries, was ledgered already (else it is claimed here, and the
// call's entry is the response's).
func (f *forwarder) ledgeredElsewhere(oc *faceSync, t *openAITap) bool {
	if t.status >= 400 {
		return false
	}
	ctx := context.WithoutCancel(oc.caller)
	switch a := t.result(); {
	case a.Queued() && (!t.eof || t.failed == ""):
		bookOf(f.s).made(ctx, a.ID, backgroundMade{client: oc.c.req.Client, bodyBytes: len(oc.c.req.Body)})
		return true
	case a.Ended(): // in success or failure, whole or broken off after
		return !bookOf(f.s).claimOnce(ctx, ledgeredKey(a.ID))
	}
	return false
}
