package dispatch

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmfleet/llmfleet"
)

// calls records the answers given to SubmitFunc's done callbacks.
type calls struct {
	mu  sync.Mutex
	got []result
}

func (c *calls) done(prompt string) func(*llmfleet.Response, error) {
	return func(resp *llmfleet.Response, err error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.got = append(c.got, result{prompt, resp, err})
	}
}

func (c *calls) results() []result {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]result(nil), c.got...)
}

// SubmitFunc returns at once and calls done exactly once per request:
// the sync route from a goroutine the Dispatcher's Go hook runs, the
// batch route when its batch's results are in.
func TestSubmitFuncAnswersOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.turnaround = func(string) time.Duration { return 30 * time.Second }
		f.sendDelay = time.Second
		var started atomic.Int64
		d := &Dispatcher{Providers: []llmfleet.Provider{f}, Policy: Policy{BatchMinSize: 2, NoRescue: true, TurnaroundPrior: time.Minute},
			Go: func(fn func()) { started.Add(1); go fn() }}
		if err := d.Open(); err != nil {
			t.Fatal(err)
		}
		defer d.Close(context.Background())
		var c calls
		for _, p := range []string{"b1", "b2"} {
			if err := d.SubmitFunc(t.Context(), time.Hour, req("k", p), c.done(p)); err != nil {
				t.Fatal(err)
			}
		}
		if err := d.SubmitFunc(t.Context(), time.Second, req("k", "s"), c.done("s")); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if n := len(c.results()); n != 0 {
			t.Fatalf("%d answers before any time passed", n)
		}
		time.Sleep(time.Hour)
		got := c.results()
		if len(got) != 3 {
			t.Fatalf("%d answers, want 3: %+v", len(got), got)
		}
		routes := map[string]llmfleet.Route{}
		for _, r := range got {
			if r.err != nil {
				t.Fatalf("%s: %v", r.prompt, r.err)
			}
			routes[r.prompt] = r.resp.Route
		}
		if routes["s"] != llmfleet.RouteSync || routes["b1"] != llmfleet.RouteBatch || routes["b2"] != llmfleet.RouteBatch {
			t.Errorf("routes %v", routes)
		}
		if started.Load() < 2 { // the sync call, the create, the polls
			t.Errorf("Go ran %d goroutines", started.Load())
		}
	})
}

// A batched request whose budget runs out is answered with
// ErrBudgetExceeded at its deadline, once: without a Store a queued one
// leaves its pool (no batch pays for it); one in flight goes on and its
// late answer is dropped.
func TestSubmitFuncBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.turnaround = func(string) time.Duration { return 10 * time.Minute }
		var entries []llmfleet.LedgerEntry
		d := &Dispatcher{Providers: []llmfleet.Provider{f},
			Policy:  Policy{BatchMinSize: 100, BatchWindow: time.Hour, NoRescue: true, TurnaroundPrior: time.Second},
			Observe: func(e llmfleet.LedgerEntry, _ bool) { entries = append(entries, e) }}
		if err := d.Open(); err != nil {
			t.Fatal(err)
		}
		defer d.Close(context.Background())
		var c calls
		start := time.Now()
		// Its pool goes out 11s before its deadline (the prior and the
		// slack), and its batch takes 10m: the budget runs out while it
		// is in flight.
		if err := d.SubmitFunc(t.Context(), time.Minute, req("k", "late"), c.done("late")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute + time.Second)
		got := c.results()
		if len(got) != 1 || !errors.Is(got[0].err, llmfleet.ErrBudgetExceeded) {
			t.Fatalf("answers at the deadline: %+v", got)
		}
		if got := time.Since(start); got > time.Minute+time.Second {
			t.Errorf("answered after %s", got)
		}
		time.Sleep(time.Hour)
		if n := len(c.results()); n != 1 {
			t.Fatalf("done called %d times", n)
		}
		s := d.Stats()
		if s.BudgetMisses != 1 || s.DroppedResults != 1 {
			t.Errorf("stats %+v", s)
		}
		if len(entries) != 1 || entries[0].Outcome != "ok" || entries[0].Route != llmfleet.RouteBatch {
			t.Errorf("the late answer is paid and recorded: %+v", entries)
		}

		// A request canceled by its caller while queued leaves its pool.
		ctx, cancel := context.WithCancel(t.Context())
		if err := d.SubmitFunc(ctx, time.Hour, req("k", "gone"), c.done("gone")); err != nil {
			t.Fatal(err)
		}
		cancel()
		synctest.Wait()
		got = c.results()
		if len(got) != 2 || !errors.Is(got[1].err, context.Canceled) {
			t.Fatalf("after cancel: %+v", got)
		}
		d.mu.Lock()
		pooled := len(d.pools.m)
		d.mu.Unlock()
		if pooled != 0 {
			t.Errorf("%d pools left after the only queued request left", pooled)
		}
	})
}

// NoLearning keeps the predictions at their priors: observed turnarounds
// do not move routing.
func TestNoLearningKeepsPriors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.turnaround = func(string) time.Duration { return 20 * time.Minute }
		d := open(t, f, Policy{BatchMinSize: 1, NoRescue: true, NoLearning: true, TurnaroundPrior: time.Second})
		for range 3 {
			if _, err := d.SubmitBatch(t.Context(), 0, req("k", "x")); err != nil {
				t.Fatal(err)
			}
		}
		if got := d.Plan(time.Minute, req("k", "y")); got != llmfleet.RouteBatch {
			t.Errorf("after 20m turnarounds, with NoLearning: %s, want batch (the 1s prior)", got)
		}
	})
}
