package dispatch

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/llmfleet/llmfleet"
)

// This file bounds the calls the dispatcher sends synchronously (the sync
// and flex routes, and the sync call of a batched request). A budget
// routes: a call already sent is not cut when its budget runs out, it is
// answered late and counted a budget miss, unless Policy.HardDeadline
// makes the budget a deadline. Policy.UpstreamTimeout bounds every such
// call, so that a hung one ends.

// The causes of a call's context ended by its bound.
var (
	errHardDeadline    = errors.New("dispatch: the call's hard deadline passed")
	errUpstreamTimeout = errors.New("dispatch: the upstream timeout passed")
)

// callBound bounds one synchronous call: its context ends when its hard
// deadline or the upstream timeout comes, whichever is first.
type callBound struct {
	ctx     context.Context
	cancel  context.CancelCauseFunc
	timers  []llmfleet.Timer
	route   llmfleet.Route
	budget  time.Duration // the request's budget, for the error
	timeout time.Duration
}

// end stops the bound of a call that ended with err and returns the
// call's error: err, wrapped in llmfleet.ErrBudgetExceeded or
// llmfleet.ErrUpstreamTimeout if the bound cut the call.
func (b *callBound) end(err error) error {
	for _, t := range b.timers {
		t.Stop()
	}
	cause := context.Cause(b.ctx)
	b.cancel(context.Canceled)
	if err == nil {
		return nil
	}
	switch cause {
	case errHardDeadline:
		return fmt.Errorf("%w (budget %s, %s): %w", llmfleet.ErrBudgetExceeded, b.budget, b.route, err)
	case errUpstreamTimeout:
		return fmt.Errorf("%w (%s, %s): %w", llmfleet.ErrUpstreamTimeout, b.timeout, b.route, err)
	}
	return err
}

// mayBeBilled reports whether a call that failed with err may be billed
// though no usage came: its request went out and no answer came back,
// either because the call was cut (its budget, the upstream timeout, its
// caller leaving) or because the connection failed after it was written
// (an *llmfleet.UncertainError not answered). A call never delivered, or
// whose last attempt the provider answered with an error (a flex attempt
// shed with a 429, say, cut afterwards while waiting to retry), is not.
func mayBeBilled(err error) bool {
	if err == nil || errors.Is(err, llmfleet.ErrNotDelivered) {
		return false
	}
	if ue := (*llmfleet.UncertainError)(nil); errors.As(err, &ue) {
		return !ue.Answered
	}
	if pe := (*llmfleet.Error)(nil); errors.As(err, &pe) {
		return false
	}
	return errors.Is(err, llmfleet.ErrBudgetExceeded) || errors.Is(err, llmfleet.ErrUpstreamTimeout) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// bound returns the bound of a call of p on route made now under ctx: cut
// after cutAfter (0: no hard deadline) with llmfleet.ErrBudgetExceeded,
// budget being the request's, and after Policy.UpstreamTimeout, or the
// longer timeout p states for the route's tier (llmfleet.TierTimeouts),
// with llmfleet.ErrUpstreamTimeout. Its context is ctx's until then.
func (s *syncCaller) bound(ctx context.Context, p llmfleet.Provider, route llmfleet.Route, budget, cutAfter time.Duration) *callBound {
	d := s.d
	timeout := llmfleet.UpstreamTimeout(p, llmfleet.TierOf(route), d.pol.UpstreamTimeout)
	b := &callBound{route: route, budget: budget, timeout: timeout}
	b.ctx, b.cancel = context.WithCancelCause(ctx)
	if cutAfter > 0 {
		b.timers = append(b.timers, d.clock.AfterFunc(cutAfter, func() { b.cancel(errHardDeadline) }))
	}
	if b.timeout > 0 {
		b.timers = append(b.timers, d.clock.AfterFunc(b.timeout, func() { b.cancel(errUpstreamTimeout) }))
	}
	return b
}

// hardAfter returns after how long a call with budget (0: none) made now
// is cut: the budget under Policy.HardDeadline, else never (0).
func (s *syncCaller) hardAfter(budget time.Duration) time.Duration {
	d := s.d
	if !d.pol.HardDeadline {
		return 0
	}
	return max(budget, 0)
}

// missed counts a budget miss for a call with budget (0: none) made at
// start that ended with err now: answered late, or cut by its budget.
func (s *syncCaller) missed(start time.Time, budget time.Duration, err error) {
	d := s.d
	if budget > 0 && (d.clock.Now().Sub(start) > budget || errors.Is(err, llmfleet.ErrBudgetExceeded)) {
		d.stats.budgetMisses.Add(1)
	}
}
