package dispatch

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmfleet/llmfleet"
)

// flexExec makes the flex calls: the attempts at the flex tier, their
// retries within the budget, and the standard call when flex is refused.
type flexExec struct {
	pol       Policy
	clock     llmfleet.Clock
	log       *slog.Logger
	syncLat   *predictor // sync call latencies
	tier      *flexTier  // what was learnt of flex tiers
	closing   context.Context
	fallbacks *atomic.Int64 // counts the standard calls made for flex
}

// observe learns from one flex call (see Dispatcher.ObserveFlex).
func (fx *flexExec) observe(provider, model string, latency time.Duration, err error) {
	fx.tier.observe(provider, model, latency, err, !fx.pol.NoLearning)
}

// flexTier is what the dispatcher learns of providers' flex tiers, per
// provider and model: how long flex calls take, how often they are
// refused for capacity, and which models refuse the tier altogether.
type flexTier struct {
	latency *predictor

	mu       sync.Mutex
	refused  map[string][]bool // recent calls, oldest first: refused for capacity?
	keep     int
	disabled map[string]bool // the provider refused the tier for the model
}

func newFlexTier(p Policy) *flexTier {
	return &flexTier{latency: newPredictor(p.FlexLatencyPrior, nil, syncLatencyQuantile, p.TurnaroundSamples),
		refused: map[string][]bool{}, keep: p.TurnaroundSamples, disabled: map[string]bool{}}
}

// observe learns from one flex call that took latency and ended with err.
func (f *flexTier) observe(provider, model string, latency time.Duration, err error, learn bool) {
	k := predictorKey(provider, model)
	f.mu.Lock()
	defer f.mu.Unlock()
	if errors.Is(err, llmfleet.ErrFlexUnsupported) {
		f.disabled[k] = true
		return
	}
	if !learn {
		return
	}
	refused := errors.Is(err, llmfleet.ErrFlexUnavailable)
	if err == nil {
		f.latency.observe(provider, model, latency)
	} else if !refused {
		return // another failure says nothing of flex
	}
	r := append(f.refused[k], refused)
	if len(r) > f.keep {
		r = r[len(r)-f.keep:]
	}
	f.refused[k] = r
}

// info returns what RouteFlex reads of a model's flex tier; has says
// whether the price table gives it one.
func (f *flexTier) info(provider, model string, has bool) Flex {
	k := predictorKey(provider, model)
	f.mu.Lock()
	disabled, r := f.disabled[k], f.refused[k]
	n := 0
	for _, x := range r {
		if x {
			n++
		}
	}
	f.mu.Unlock()
	fi := Flex{Available: has && !disabled, Latency: f.latency.predict(provider, model)}
	if len(r) > 0 {
		fi.Refusal = float64(n) / float64(len(r))
	}
	return fi
}

// ObserveFlex learns from a flex call made outside the dispatcher (the
// proxy makes its own, to stream them): see llmfleet.FlexObserver.
func (d *Dispatcher) ObserveFlex(provider, model string, latency time.Duration, err error) {
	d.flex.observe(provider, model, latency, err, !d.pol.NoLearning)
}

var _ llmfleet.FlexObserver = (*Dispatcher)(nil)

// SubmitFlex sends req to the provider's flex tier (req.Flex set on a
// copy), whatever its model's route, and waits for the answer. A call
// refused for capacity (llmfleet.ErrFlexUnavailable) is retried after
// Policy.FlexRetryAfter while the budget (counted from now; 0: none)
// leaves room for the wait and a standard call, and is then sent to the
// standard tier; a call refused because the model has no flex tier
// (llmfleet.ErrFlexUnsupported) goes to the standard tier at once, and
// an attempt still unanswered when the budget has only a standard call's
// time left (its predicted latency and RescueMargin) is given up for one.
// The answer's Route is RouteFlex, its Tier the tier the provider served
// (a fallback's is the standard one). The budget routes and does not cut:
// a call still unanswered when it runs out is answered late (a budget
// miss), unless Policy.HardDeadline makes it a deadline, when the call is
// cut then with llmfleet.ErrBudgetExceeded. Policy.UpstreamTimeout, or the
// longer one the provider states for its flex tier (llmfleet.TierTimeouts),
// bounds the whole of it (llmfleet.ErrUpstreamTimeout).
func (d *Dispatcher) SubmitFlex(ctx context.Context, budget time.Duration, req *llmfleet.Request) (*llmfleet.Response, error) {
	p, err := d.calls.provider(req)
	if err != nil {
		return nil, err
	}
	budget = d.pol.Budget(budget)
	start := d.clock.Now()
	b := d.calls.bound(ctx, p, llmfleet.RouteFlex, budget, d.calls.hardAfter(budget))
	rec := callRecord{p: p, req: req, route: llmfleet.RouteFlex, start: start, budget: budget}
	model := ""
	if info, err := p.Inspect(req); err == nil {
		model, rec.view = info.Model, d.calls.viewOf(p, req, info, budget)
	}
	d.stats.flexCalls.Add(1)
	span := d.traces.call(ctx, p, req, llmfleet.RouteFlex, budget)
	out := d.flexer.call(b.ctx, p, req, model, start, budget)
	resp, err := out.resp, b.end(out.err)
	called(span, p, llmfleet.RouteFlex, resp, err, d.answers.price)
	d.calls.missed(start, budget, err)
	rec.asked, rec.rescued = out.asked, out.gaveUp
	if out.gaveUp {
		d.calls.givenUp(rec)
	}
	d.calls.observe(rec, resp, err)
	if err != nil {
		d.stats.errors.Add(1)
		return nil, err
	}
	resp.Route = llmfleet.RouteFlex
	return resp, nil
}

// flexOutcome is how the flex attempts of one request, and its standard
// call if flex was refused for good, ended.
type flexOutcome struct {
	resp *llmfleet.Response
	err  error
	// asked is the tier the last call asked for: standard after a
	// fallback.
	asked llmfleet.Tier
	// gaveUp says an attempt was given up, once sent, for a standard call
	// (too slow for the budget): the provider may bill it.
	gaveUp bool
}

// call makes the flex attempts of one request and, if flex is refused
// for good, its standard call.
func (fx *flexExec) call(ctx context.Context, p llmfleet.Provider, req *llmfleet.Request, model string, start time.Time, budget time.Duration) flexOutcome {
	flex := *req
	flex.Flex = true
	var resp *llmfleet.Response
	var last error // the last attempt's error
	answered, err := fx.execute(ctx, p.Name(), model, start, budget, func(actx context.Context) error {
		resp, last = p.Send(actx, &flex)
		return last
	})
	if err != nil {
		return flexOutcome{err: err, asked: llmfleet.TierFlex}
	}
	if answered {
		return flexOutcome{resp: resp, asked: llmfleet.TierFlex}
	}
	// Falling back: after a refusal (not billed), or an attempt given up
	// as it ran (which the provider may bill).
	out := flexOutcome{asked: llmfleet.TierStandard, gaveUp: mayBeBilled(last)}
	fx.fallbacks.Add(1)
	t0 := fx.clock.Now()
	out.resp, out.err = p.Send(ctx, req)
	if out.err == nil && !fx.pol.NoLearning {
		fx.syncLat.observe(p.Name(), out.resp.Model, fx.clock.Now().Sub(t0))
	}
	return out
}

// ExecuteFlex runs the flex attempts of a call of provider's model whose
// budget counts from start (0: none), as SubmitFlex does: attempt sends
// one attempt in the flex tier and returns nil once answered (its caller
// keeps the answer), an error matching llmfleet.ErrFlexUnavailable or
// llmfleet.ErrFlexUnsupported for a refusal, or another error to give up
// with. A capacity refusal is retried after Policy.FlexRetryAfter while
// the budget leaves room for the wait and a standard call (its predicted
// latency and RescueMargin: the reserve the router plans with); an attempt
// still unanswered when only that is left is given up (its context ends).
// It returns true once an attempt was answered, false and nil when the
// call is to go to the standard tier, or the error to give up with. See
// llmfleet.FlexExecutor: the proxy streams its flex calls this way.
func (d *Dispatcher) ExecuteFlex(ctx context.Context, provider, model string, start time.Time, budget time.Duration,
	attempt func(context.Context) error) (bool, error) {
	return d.flexer.execute(ctx, provider, model, start, budget, attempt)
}

// execute is ExecuteFlex.
func (fx *flexExec) execute(ctx context.Context, provider, model string, start time.Time, budget time.Duration,
	attempt func(context.Context) error) (bool, error) {
	for n := 0; ; n++ {
		t0 := fx.clock.Now()
		// What a standard call needs after this attempt, should it fail.
		reserve := fx.syncLat.predict(provider, model) + fx.pol.RescueMargin
		actx, cancel := ctx, context.CancelFunc(func() {})
		if budget > 0 {
			// An attempt still unanswered when only a standard call's
			// time is left is given up for one: flex never breaks a budget.
			room := start.Add(budget - reserve).Sub(t0)
			if room <= 0 { // none: an attempt would be given up as it went out
				fx.log.Info("no room in the budget for a flex attempt: standard tier", "provider", provider, "model", model)
				return false, nil
			}
			actx, cancel = withTimeout(fx.clock, ctx, room)
		}
		err := attempt(actx)
		late := err != nil && ctx.Err() == nil && context.Cause(actx) == errTimedOut
		cancel()
		if late {
			fx.observe(provider, model, fx.clock.Now().Sub(t0), nil) // as slow as that, at least
			fx.log.Info("flex call too slow for its budget: standard tier", "provider", provider, "model", model)
			return false, nil
		}
		fx.observe(provider, model, fx.clock.Now().Sub(t0), err)
		if err == nil || ctx.Err() != nil {
			return err == nil, err
		}
		if errors.Is(err, llmfleet.ErrFlexUnsupported) {
			fx.log.Info("flex tier refused for the model: standard tier from now on", "provider", provider, "model", model)
			return false, nil
		}
		if !errors.Is(err, llmfleet.ErrFlexUnavailable) {
			return false, err
		}
		wait := fx.pol.FlexRetryAfter(n)
		if budget > 0 && fx.clock.Now().Add(wait+reserve).After(start.Add(budget)) {
			return false, nil
		}
		if !fx.sleep(ctx, wait) {
			return false, err
		}
	}
}

var _ llmfleet.FlexExecutor = (*Dispatcher)(nil)

// sleep waits on the dispatcher's clock; false if ctx ended or the
// dispatcher closed first.
func (fx *flexExec) sleep(ctx context.Context, wait time.Duration) bool {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(fx.closing, cancel)
	defer stop()
	return llmfleet.Sleep(sctx, fx.clock, wait) == nil
}
