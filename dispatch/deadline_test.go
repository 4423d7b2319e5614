package dispatch

import (
	"context"
	"errors"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/claude"
	"github.com/llmfleet/llmfleet/emulator"
)

// These tests make sync calls over loopback to the emulator, through the
// Anthropic provider, on a clock that moves only when told to: the
// dispatcher's, and the emulator's [slow:] waits. Nothing waits on real
// time but the loopback round trips; guard only keeps a broken dispatcher
// from hanging a test.

const guard = 30 * time.Second

// stepClock is an llmfleet.Clock (and Sleeper) that moves only on Advance.
type stepClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*stepTimer
}

type stepTimer struct {
	c  *stepClock
	at time.Time
	f  func()
}

func newStepClock() *stepClock {
	return &stepClock{now: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)}
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *stepClock) AfterFunc(d time.Duration, f func()) llmfleet.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &stepTimer{c: c, at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return t
}

func (t *stepTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	for i, x := range t.c.timers {
		if x == t {
			t.c.timers = append(t.c.timers[:i], t.c.timers[i+1:]...)
			return true
		}
	}
	return false
}

// Sleep waits d on the clock, or until ctx ends.
func (c *stepClock) Sleep(ctx context.Context, d time.Duration) error {
	return c.sleepNoting(ctx, d, func() {})
}

// sleepNoting is Sleep, calling began once its timer is set (so that an
// Advance that follows counts for it).
func (c *stepClock) sleepNoting(ctx context.Context, d time.Duration, began func()) error {
	done := make(chan struct{})
	t := c.AfterFunc(d, func() { close(done) })
	began()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		t.Stop()
		return ctx.Err()
	}
}

// Advance moves the clock on by d and runs the timers that came due.
func (c *stepClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []*stepTimer
	kept := c.timers[:0]
	for _, t := range c.timers {
		if t.at.After(c.now) {
			kept = append(kept, t)
		} else {
			due = append(due, t)
		}
	}
	c.timers = kept
	c.mu.Unlock()
	for _, t := range due {
		t.f()
	}
}

// emuStack is a dispatcher on a stepClock whose provider is the Anthropic
// one in front of an emulator on loopback.
type emuStack struct {
	d     *Dispatcher
	clock *stepClock
	slept chan time.Duration // each [slow:] wait the emulator begins
	l     ledgerOf
}

// emuClock is the emulator's clock: the real time, and waits on the step
// clock, each told on slept once its timer is set.
type emuClock struct {
	llmfleet.RealClock
	st *emuStack
}

func (c emuClock) Sleep(ctx context.Context, d time.Duration) error {
	return c.st.clock.sleepNoting(ctx, d, func() { c.st.slept <- d })
}

func newEmuStack(t *testing.T, pol Policy) *emuStack {
	t.Helper()
	st := &emuStack{clock: newStepClock(), slept: make(chan time.Duration, 4)}
	emu := &emulator.Server{Clock: emuClock{st: st}}
	up := httptest.NewServer(emu)
	t.Cleanup(up.Close)
	st.d = &Dispatcher{Providers: []llmfleet.Provider{&claude.Provider{BaseURL: up.URL, MaxRetries: -1}},
		Clock: st.clock, Policy: pol, Observe: st.l.observe}
	if err := st.d.Open(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.d.Close(context.Background()) })
	return st
}

type callAnswer struct {
	resp *llmfleet.Response
	err  error
}

// submit calls Submit in a goroutine, and returns once the emulator holds
// the call (it has begun its [slow:] wait).
func (st *emuStack) submit(t *testing.T, ctx context.Context, budget time.Duration, body string) <-chan callAnswer {
	t.Helper()
	done := make(chan callAnswer, 1)
	go func() {
		resp, err := st.d.Submit(ctx, budget, &llmfleet.Request{Credential: llmfleet.Credential{APIKey: "sk-deadline"}, Body: []byte(body)})
		done <- callAnswer{resp, err}
	}()
	select {
	case <-st.slept:
	case r := <-done:
		t.Fatalf("answered before the upstream held the call: %+v %v", r.resp, r.err)
	case <-time.After(guard):
		t.Fatal("the call never reached the upstream")
	}
	return done
}

func wait(t *testing.T, done <-chan callAnswer) callAnswer {
	t.Helper()
	select {
	case r := <-done:
		return r
	case <-time.After(guard):
		t.Fatal("no answer")
		return callAnswer{}
	}
}

func notYet(t *testing.T, done <-chan callAnswer, when string) {
	t.Helper()
	select {
	case r := <-done:
		t.Fatalf("answered %s: %+v %v", when, r.resp, r.err)
	default:
	}
}

// entry returns the one ledger entry observed.
func (st *emuStack) entry(t *testing.T) llmfleet.LedgerEntry {
	t.Helper()
	es := st.l.all()
	if len(es) != 1 {
		t.Fatalf("ledger %+v, want one entry", es)
	}
	return es[0]
}

const slowBody = `{"model":"claude-haiku-4-5","max_tokens":50,"messages":[{"role":"user","content":"[slow:10s] late"}]}`

// A sync call whose upstream answers after its budget is answered, late:
// the budget routes, it does not cut a call already sent. Its ledger
// entry has the usage the upstream sent and misses its budget.
func TestSubmitSyncAnsweredLateOverHTTP(t *testing.T) {
	st := newEmuStack(t, Policy{})
	done := st.submit(t, t.Context(), 3*time.Second, slowBody)
	st.clock.Advance(3 * time.Second) // the budget runs out
	notYet(t, done, "when the budget ran out")
	st.clock.Advance(7 * time.Second) // the upstream answers
	r := wait(t, done)
	if r.err != nil || r.resp.Route != llmfleet.RouteSync || r.resp.Usage.OutputTokens == 0 {
		t.Fatalf("%+v %v", r.resp, r.err)
	}
	e := st.entry(t)
	if e.Outcome != "ok" || e.BudgetMet || e.Budget != 3*time.Second || e.Latency != 10*time.Second ||
		e.Usage != r.resp.Usage || e.Estimated || e.Route != llmfleet.RouteSync {
		t.Fatalf("entry %+v", e)
	}
	if s := st.d.Stats(); s.BudgetMisses != 1 || s.Errors != 0 {
		t.Fatalf("stats %+v", s)
	}
}

// Under Policy.HardDeadline the call is cut at its budget with
// ErrBudgetExceeded; the provider may bill it, so its entry carries an
// estimated usage.
func TestSubmitSyncHardDeadlineOverHTTP(t *testing.T) {
	st := newEmuStack(t, Policy{HardDeadline: true})
	done := st.submit(t, t.Context(), 3*time.Second, slowBody)
	st.clock.Advance(2999 * time.Millisecond)
	notYet(t, done, "before the budget ran out")
	st.clock.Advance(time.Millisecond)
	r := wait(t, done)
	if !errors.Is(r.err, llmfleet.ErrBudgetExceeded) {
		t.Fatalf("%+v %v, want ErrBudgetExceeded", r.resp, r.err)
	}
	e := st.entry(t)
	if e.Outcome != "budget_exceeded" || e.BudgetMet || !e.Estimated ||
		e.Usage != llmfleet.EstimatedUsage(int64(len(slowBody))) || e.Model != "claude-haiku-4-5" {
		t.Fatalf("entry %+v", e)
	}
	if s := st.d.Stats(); s.BudgetMisses != 1 || s.Errors != 1 {
		t.Fatalf("stats %+v", s)
	}
}

// Policy.UpstreamTimeout cuts a hung call whatever its budget (none
// here), with ErrUpstreamTimeout; its entry is estimated too.
func TestSubmitUpstreamTimeoutOverHTTP(t *testing.T) {
	st := newEmuStack(t, Policy{UpstreamTimeout: time.Minute})
	hung := `{"model":"claude-haiku-4-5","max_tokens":50,"messages":[{"role":"user","content":"[slow:10m] hung"}]}`
	done := st.submit(t, t.Context(), 0, hung)
	st.clock.Advance(59 * time.Second)
	notYet(t, done, "before the upstream timeout")
	st.clock.Advance(time.Second)
	r := wait(t, done)
	if !errors.Is(r.err, llmfleet.ErrUpstreamTimeout) || errors.Is(r.err, llmfleet.ErrBudgetExceeded) {
		t.Fatalf("%+v %v, want ErrUpstreamTimeout", r.resp, r.err)
	}
	if e := st.entry(t); e.Outcome != "timeout_error" || !e.Estimated || e.Usage.InputTokens == 0 || e.BudgetMet {
		t.Fatalf("entry %+v", e)
	}
}

// A caller that leaves mid-call leaves an entry: caller_canceled, its
// usage estimated.
func TestSubmitCallerLeavesOverHTTP(t *testing.T) {
	st := newEmuStack(t, Policy{})
	ctx, cancel := context.WithCancel(t.Context())
	done := st.submit(t, ctx, 3*time.Second, slowBody)
	st.clock.Advance(time.Second)
	cancel()
	if r := wait(t, done); !errors.Is(r.err, context.Canceled) {
		t.Fatalf("%+v %v", r.resp, r.err)
	}
	if e := st.entry(t); e.Outcome != "caller_canceled" || !e.Estimated || e.Usage != llmfleet.EstimatedUsage(int64(len(slowBody))) {
		t.Fatalf("entry %+v", e)
	}
}
