package proxy

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/claudewire"
)

// This file bounds the upstream calls of the sync and flex routes. A
// latency budget routes: a call already sent is not cut when its budget
// runs out (the upstream bills it all the same), it is answered late.
// Only a caller who asks for a hard deadline (HeaderDeadline) has its
// call cut at the budget. The upstream timeout (Server.UpstreamTimeout)
// bounds every call, so that a hung one ends.

// HeaderDeadline, set to "hard", makes a request's latency budget a hard
// deadline: a sync or flex call whose upstream has not answered when the
// budget runs out is cut and answered 504 timeout_error. Without it the
// budget routes and does not cut. Any other value is a 400. Like every
// llmfleet-* header it never goes upstream.
const HeaderDeadline = "Llmfleet-Deadline"

// DeadlineHard is the one value of HeaderDeadline.
const DeadlineHard = "hard"

// DefaultUpstreamTimeout is Server.UpstreamTimeout's default: ten
// minutes, as the providers' SDKs wait.
const DefaultUpstreamTimeout = 10 * time.Minute

// badDeadline is the message of a malformed HeaderDeadline.
const badDeadline = `The llmfleet-deadline header must be "hard" (or be left out: the latency budget then routes the call and never cuts it once sent).`

// hardDeadline reads HeaderDeadline: whether the budget is a hard
// deadline, and false ok if the header is malformed.
func hardDeadline(h http.Header) (hard, ok bool) {
	switch h.Get(HeaderDeadline) {
	case "":
		return false, true
	case DeadlineHard:
		return true, true
	}
	return false, false
}

// States of a bounded call (callBound.state).
const (
	callWaiting    int32 = iota // no answer yet
	callAnswered                // the answer (its response headers) came in time
	callCutHard                 // its hard deadline came first
	callCutTimeout              // the upstream timeout came first
)

// errCut is the transport's error for a call cut before its answer came.
var errCut = errors.New("the call was cut before the upstream answered")

// callBound bounds the wait for an upstream call's answer: until it is
// answered, its hard deadline or the upstream timeout cancels the call's
// context. Once answered, nothing cuts it.
type callBound struct {
	state  atomic.Int32
	cancel context.CancelFunc
	timer  llmfleet.Timer // at the earlier of the two bounds; nil: none
}

// bound returns ctx bounded on the Server's clock: cut after hard (0: no
// hard deadline) and after timeout (0 or less: none).
func (s *Server) bound(ctx context.Context, hard, timeout time.Duration) (context.Context, *callBound) {
	b := new(callBound)
	return b.start(s.clock, ctx, hard, timeout), b
}

// start bounds ctx with b, as Server.bound does, for a callBound held in
// another value. One timer suffices: the earlier bound cuts the call,
// and nothing is left for the later one to cut (the hard deadline wins a
// tie).
func (b *callBound) start(clock llmfleet.Clock, ctx context.Context, hard, timeout time.Duration) context.Context {
	ctx, b.cancel = context.WithCancel(ctx)
	d, state := hard, callCutHard
	if timeout > 0 && (hard <= 0 || timeout < hard) {
		d, state = timeout, callCutTimeout
	}
	if d > 0 {
		b.timer = clock.AfterFunc(d, func() { b.cut(state) })
	}
	return ctx
}

func (b *callBound) cut(state int32) {
	if b.state.CompareAndSwap(callWaiting, state) {
		b.cancel()
	}
}

// answered marks the call answered, unless it was cut first, and reports
// whether it was.
func (b *callBound) answered() bool {
	if !b.state.CompareAndSwap(callWaiting, callAnswered) {
		return false
	}
	b.stop()
	return true
}

// cutBy returns callCutHard or callCutTimeout for a call that was cut,
// else callWaiting or callAnswered. A nil bound never cuts.
func (b *callBound) cutBy() int32 {
	if b == nil {
		return callWaiting
	}
	return b.state.Load()
}

// stop stops the bound's timer.
func (b *callBound) stop() {
	if b.timer != nil {
		b.timer.Stop()
	}
}

// release stops the timer and ends the bounded context: once the call's
// answer has been read.
func (b *callBound) release() {
	b.stop()
	b.cancel()
}

// tierTimeout returns the upstream timeout of a call of provider in tier:
// the longer of the Server's and the one the provider states for the tier
// (Server.TierTimeout), unless the Server's is off.
func tierTimeout(s *Server, provider string, tier llmfleet.Tier) time.Duration {
	if s.upstreamTimeout <= 0 || s.TierTimeout == nil {
		return s.upstreamTimeout
	}
	return max(s.upstreamTimeout, s.TierTimeout(provider, tier))
}

// cutMessage is the message of the 504 of a call to upstream (its name
// in the message) cut by its hard deadline (budget) or by the upstream
// timeout (state callCutTimeout).
func (s *Server) cutMessage(state int32, budget time.Duration, upstream string) string {
	if state == callCutTimeout {
		return timeoutMessage(upstream, s.upstreamTimeout)
	}
	return "The request's latency budget of " + strconv.FormatInt(budget.Milliseconds(), 10) +
		" ms ran out before the " + upstream + " answered (llmfleet-deadline: hard)."
}

// timeoutMessage is the message of the 504 of a call to upstream cut by
// an upstream timeout of d.
func timeoutMessage(upstream string, d time.Duration) string {
	return "The " + upstream + " did not answer within llmfleet's upstream timeout (--upstream-timeout) of " + d.String() + "."
}

// writeCut answers a call cut by state: 504 timeout_error in the
// Anthropic envelope, x-should-retry: false after a hard deadline (the
// same call with the same budget would be cut again).
func (s *Server) writeCut(w http.ResponseWriter, state int32, budget time.Duration) {
	id := llmfleet.NewID("req_")
	writeErrorBody(w, failure{status: http.StatusGatewayTimeout, requestID: id, noRetry: state == callCutHard,
		body: claudewire.Envelope("timeout_error", s.cutMessage(state, budget, "upstream API"), id)})
}

// releasingBody is a response body that runs done once closed.
type releasingBody struct {
	io.ReadCloser
	done func()
}

func (b releasingBody) Close() error {
	err := b.ReadCloser.Close()
	b.done()
	return err
}

// nextWithin sends a call of the SDK middlewares (call sends req on),
// under its hard deadline if it has one (hard), left from now: a call cut
// by it, or whose deadline has passed already, is answered 504 by
// cutAnswer, in process. The SDK's own timeout bounds it otherwise.
func (s *Server) nextWithin(req *http.Request, hard bool, left time.Duration, call func(*http.Request) (*http.Response, error),
	cutAnswer http.HandlerFunc) (*http.Response, error) {
	switch {
	case !hard:
		return call(req)
	case left <= 0:
		return serveInProcess(req, cutAnswer), nil
	}
	ctx, b := s.bound(req.Context(), left, 0)
	resp, err := call(req.WithContext(ctx))
	if err == nil && b.answered() {
		resp.Body = releasingBody{resp.Body, b.release}
		return resp, nil
	}
	b.release()
	if b.cutBy() != callCutHard {
		return resp, err
	}
	if resp != nil {
		resp.Body.Close()
	}
	return serveInProcess(req, cutAnswer), nil
}
