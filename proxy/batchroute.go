package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/claudewire"
)

// This file holds the Anthropic face's batch route: a routed call pooled
// through the Submitter and answered from its batch.

// budgetSpent answers a batched call whose budget ran out before it could
// be handed to the Submitter (reading and checking its body took it all).
func budgetSpent(w http.ResponseWriter, c *call) {
	id := llmfleet.NewID("req_")
	msg := "The request's latency budget of " + strconv.FormatInt(c.budget.Milliseconds(), 10) +
		" ms ran out before llmfleet could queue it."
	writeErrorBody(w, failure{status: http.StatusGatewayTimeout, requestID: id, noRetry: true,
		body: claudewire.Envelope("timeout_error", msg, id)})
}

// serveBatch pools a routed call into a batch and answers with its result:
// the Message as JSON, or a synthesised event stream for a streaming caller.
//
// The Submitter gets what is left of the budget, counted from the
// request's arrival, and starts its own timer with it; a budget already
// spent is answered 504 timeout_error at once.
func (s *Server) serveBatch(w http.ResponseWriter, r *http.Request, c *call) {
	ctx := r.Context()
	w.Header().Set(HeaderRequestID, c.req.ID)
	budget := c.budget
	if budget > 0 {
		if budget = s.remaining(c); budget <= 0 {
			budgetSpent(w, c)
			return
		}
	}
	if !c.stream {
		if s.parkConn(w, r, c, budget) {
			return // answered later, on the connection taken over
		}
		resp, err := s.Submitter.SubmitBatch(ctx, budget, c.req)
		s.writeBatchAnswer(ctx, w, c, resp, err)
		return
	}

	p := &parkedStream{w: w, rc: http.NewResponseController(w), clock: s.clock, interval: s.PingInterval}
	if p.interval <= 0 {
		p.interval = DefaultPingInterval
	}
	p.arm()
	resp, err := s.Submitter.SubmitBatch(ctx, budget, c.req)
	begun := p.stop()
	if err != nil {
		s.logFailure(ctx, err)
		setBatchID(w, err) // a trailer if the stream had begun
		f := s.batchFailure(ctx, c, err)
		if !begun {
			writeErrorBody(w, f)
			return
		}
		writeErrorEvent(w, f.eventData())
		p.rc.Flush()
		return
	}
	if resp.BatchID != "" {
		w.Header().Set(HeaderBatchID, resp.BatchID) // a trailer if the stream had begun
	}
	if !begun {
		p.begin(false)
	}
	if err := writeMessageEvents(w, resp.Body); err != nil {
		s.log.Warn("batch result is not a Message", "batch", resp.BatchID, "err", err)
		writeErrorEvent(w, claudewire.Envelope("api_error", "llmfleet got a malformed batch result", llmfleet.NewID("req_")))
	}
	p.rc.Flush()
}

// writeBatchAnswer answers a non-streaming batched call with what the
// Submitter returned: the Message as JSON, or the error as the sync API
// would have answered it. ctx is the caller's.
func (s *Server) writeBatchAnswer(ctx context.Context, w http.ResponseWriter, c *call, resp *llmfleet.Response, err error) {
	if err != nil {
		s.logFailure(ctx, err)
		setBatchID(w, err)
		writeErrorBody(w, s.batchFailure(ctx, c, err))
		return
	}
	h := w.Header()
	if resp.RequestID != "" {
		h.Set(HeaderRequestID, resp.RequestID)
	}
	if resp.Route != "" {
		h.Set(HeaderRoute, string(resp.Route)) // sync when a rescue answered
	}
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(resp.Body)))
	h.Set("Request-Id", llmfleet.NewID("req_"))
	if resp.BatchID != "" {
		h.Set(HeaderBatchID, resp.BatchID)
	}
	w.WriteHeader(http.StatusOK)
	w.Write(resp.Body)
}

// setBatchID names the batch of a batched request that failed in it.
func setBatchID(w http.ResponseWriter, err error) {
	var be *llmfleet.BatchError
	if errors.As(err, &be) && be.BatchID != "" {
		w.Header().Set(HeaderBatchID, be.BatchID)
	}
}

// batchFailure is the answer to a batched call that failed with err. If
// the Submitter stored an answer for the request (llmfleet.Tickets), that
// very answer is given, so that fetching the request again later gets the
// same bytes, request_id included.
func (s *Server) batchFailure(ctx context.Context, c *call, err error) failure {
	f := failureFor(err)
	t, ok := s.Submitter.(llmfleet.Tickets)
	if !ok || ctx.Err() != nil {
		return f
	}
	sr, lerr := t.Lookup(ctx, c.req.ID, c.req.Credential)
	if lerr != nil || sr.State != llmfleet.RequestDone || sr.Result == nil || sr.Result.Err == nil {
		return f
	}
	f.status, f.body = resultAnswer(sr.Result)
	var env struct {
		RequestID string `json:"request_id"`
	}
	if json.Unmarshal(f.body, &env) == nil && env.RequestID != "" {
		f.requestID = env.RequestID
	}
	return f
}

// writeFailure answers err, from the Submitter, as the sync API would have.
func (s *Server) writeFailure(w http.ResponseWriter, r *http.Request, err error) {
	s.logFailure(r.Context(), err)
	f := failureFor(err)
	writeErrorBody(w, f)
}

func (s *Server) logFailure(ctx context.Context, err error) {
	var pe *llmfleet.Error
	if ctx.Err() != nil || errors.As(err, &pe) {
		return // the caller left, or the provider answered: nothing wrong here
	}
	s.log.Warn("batched request failed", "err", err)
}
