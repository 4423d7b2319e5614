package dispatch

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmfleet/llmfleet"
)

// openFlex opens a dispatcher over f in which every model has a flex tier.
func openFlex(t *testing.T, f *fakeProvider, l *ledgerOf) *Dispatcher {
	t.Helper()
	d := &Dispatcher{Providers: []llmfleet.Provider{f}, Observe: l.observe,
		Flex:   func(provider, model string) bool { return provider == "fake" },
		Policy: Policy{BatchMinSize: 1}}
	if err := d.Open(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close(t.Context()) })
	return d
}

// TestFlexRoute: a model with a flex tier and a budget that fits it goes
// flex, batch prices at once; its ledger entry is priced at the tier
// served.
func TestFlexRoute(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		var l ledgerOf
		d := openFlex(t, f, &l)
		if r := d.Plan(time.Hour, req("k", "a")); r != llmfleet.RouteFlex {
			t.Fatalf("Plan = %s, want flex", r)
		}
		if r := d.Plan(3*time.Second, req("k", "a")); r != llmfleet.RouteSync {
			t.Fatalf("Plan of a 3s budget = %s, want sync", r)
		}
		resp, err := d.Submit(t.Context(), time.Hour, req("k", "a"))
		if err != nil {
			t.Fatal(err)
		}
		if resp.Route != llmfleet.RouteFlex || resp.Tier != llmfleet.TierFlex || f.count("flex") != 1 || f.count("create") != 0 {
			t.Fatalf("route %s tier %s; %d flex calls, %d creates", resp.Route, resp.Tier, f.count("flex"), f.count("create"))
		}
		es := l.all()
		if len(es) != 1 || es[0].Route != llmfleet.RouteFlex || es[0].Tier != llmfleet.TierFlex || !es[0].BudgetMet || es[0].Budget != time.Hour {
			t.Fatalf("entries %+v", es)
		}
		if s := d.Stats(); s.FlexCalls != 1 || s.FlexFallbacks != 0 || s.SyncCalls != 0 {
			t.Fatalf("stats %+v", s)
		}
	})
}

// TestFlexRetriedThenServed: a flex call refused for capacity is retried
// after a doubling wait and served.
func TestFlexRetriedThenServed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.flexRefusals = 3
		var l ledgerOf
		d := openFlex(t, f, &l)
		start := time.Now()
		resp, err := d.Submit(t.Context(), time.Hour, req("k", "a"))
		if err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took != 7*time.Second { // 1s + 2s + 4s
			t.Errorf("served after %s, want 7s of waits", took)
		}
		if resp.Tier != llmfleet.TierFlex || f.count("flex") != 4 || f.count("send") != 4 {
			t.Fatalf("tier %s; %d flex calls of %d", resp.Tier, f.count("flex"), f.count("send"))
		}
		if s := d.Stats(); s.FlexCalls != 1 || s.FlexFallbacks != 0 {
			t.Fatalf("stats %+v", s)
		}
	})
}

// TestFlexFallsBackWithinTheBudget: a flex call refused again and again is
// retried only while the budget leaves room for the wait and a standard
// call, then sent standard, in time, and priced standard.
func TestFlexFallsBackWithinTheBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.flexRefusals = -1
		var l ledgerOf
		d := openFlex(t, f, &l)
		start := time.Now()
		// The standard fallback reserves 30s (the sync latency prior) and
		// 2s: attempts at 0, 1, 3, 7 and 15s; a wait of 16s more would
		// leave 29s.
		resp, err := d.SubmitFlex(t.Context(), time.Minute, req("k", "a"))
		if err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took != 15*time.Second {
			t.Errorf("answered after %s, want 15s", took)
		}
		if f.count("flex") != 5 || f.count("send") != 6 {
			t.Fatalf("%d flex calls, %d calls", f.count("flex"), f.count("send"))
		}
		if resp.Route != llmfleet.RouteFlex || resp.Tier != llmfleet.TierStandard {
			t.Fatalf("route %s tier %s", resp.Route, resp.Tier)
		}
		es := l.all()
		if len(es) != 1 || es[0].Route != llmfleet.RouteFlex || es[0].PricedTier() != llmfleet.TierStandard || !es[0].BudgetMet {
			t.Fatalf("entries %+v", es)
		}
		if s := d.Stats(); s.FlexCalls != 1 || s.FlexFallbacks != 1 {
			t.Fatalf("stats %+v", s)
		}
		// Everything refused: flex is now refused too often to be worth
		// more than a batch.
		if r := d.Plan(time.Hour, req("k", "b")); r != llmfleet.RouteBatch {
			t.Errorf("Plan after the refusals = %s, want batch", r)
		}
		if r := d.Plan(2*time.Minute, req("k", "b")); r != llmfleet.RouteFlex {
			t.Errorf("Plan of a budget too short to batch = %s, want flex", r)
		}
	})
}

// TestFlexTooSlowGoesStandard: a flex call still unanswered when only a
// standard call's time is left of the budget is given up for one, which
// answers in time. The attempt given up, which the provider may bill, is
// in the ledger beside it (estimated, rescue "late"; the call's own entry
// rescue "sync").
func TestFlexTooSlowGoesStandard(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.flexDelay = 10 * time.Minute
		var l ledgerOf
		d := openFlex(t, f, &l)
		start := time.Now()
		// The standard call reserves 30s (the sync latency prior) and 2s.
		resp, err := d.SubmitFlex(t.Context(), 2*time.Minute, req("k", "a"))
		if err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took != 88*time.Second {
			t.Errorf("answered after %s, want 88s", took)
		}
		if resp.Route != llmfleet.RouteFlex || resp.Tier != llmfleet.TierStandard || f.count("flex") != 1 || f.count("send") != 2 {
			t.Fatalf("route %s tier %s; %d flex calls of %d", resp.Route, resp.Tier, f.count("flex"), f.count("send"))
		}
		es := l.all()
		if len(es) != 2 || !es[1].BudgetMet || es[1].PricedTier() != llmfleet.TierStandard || es[1].Rescue != llmfleet.RescueSync {
			t.Fatalf("entries %+v", es)
		}
		givenUpEntry(t, es[0])
		if s := d.Stats(); s.FlexFallbacks != 1 || s.BudgetMisses != 0 {
			t.Fatalf("stats %+v", s)
		}
	})
}

// TestFlexFallbackAnsweredLate: the flex call too slow for its budget is
// still given up for a standard call in time (routing), but the standard
// call, slow too, is not cut when the budget runs out: it is answered
// late, a budget miss.
func TestFlexFallbackAnsweredLate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.flexDelay, f.sendDelay = 10*time.Minute, 2*time.Minute
		var l ledgerOf
		d := openFlex(t, f, &l)
		start := time.Now()
		resp, err := d.SubmitFlex(t.Context(), 2*time.Minute, req("k", "a"))
		if err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took != 88*time.Second+2*time.Minute {
			t.Errorf("answered after %s, want 3m28s (the fallback at 88s, then its 2m)", took)
		}
		if resp.Route != llmfleet.RouteFlex || resp.Tier != llmfleet.TierStandard {
			t.Fatalf("route %s tier %s", resp.Route, resp.Tier)
		}
		es := l.all()
		if len(es) != 2 || es[1].BudgetMet || es[1].Outcome != "ok" || es[1].Estimated || es[1].Usage.OutputTokens == 0 {
			t.Fatalf("entries %+v", es)
		}
		givenUpEntry(t, es[0])
		if s := d.Stats(); s.FlexFallbacks != 1 || s.BudgetMisses != 1 || s.Errors != 0 {
			t.Fatalf("stats %+v", s)
		}
	})
}

// TestFlexHardDeadline: under Policy.HardDeadline the same call is cut at
// its budget with ErrBudgetExceeded, its usage estimated in the ledger.
func TestFlexHardDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.flexDelay, f.sendDelay = 10*time.Minute, 2*time.Minute
		var l ledgerOf
		d := &Dispatcher{Providers: []llmfleet.Provider{f}, Observe: l.observe,
			Flex:   func(provider, model string) bool { return true },
			Policy: Policy{BatchMinSize: 1, HardDeadline: true}}
		if err := d.Open(); err != nil {
			t.Fatal(err)
		}
		defer d.Close(t.Context())
		start := time.Now()
		r := req("k", "a")
		_, err := d.SubmitFlex(t.Context(), 2*time.Minute, r)
		if !errors.Is(err, llmfleet.ErrBudgetExceeded) || time.Since(start) != 2*time.Minute {
			t.Fatalf("after %s: %v, want ErrBudgetExceeded at the budget", time.Since(start), err)
		}
		es := l.all()
		if len(es) != 2 || es[1].BudgetMet || es[1].Outcome != "budget_exceeded" || !es[1].Estimated ||
			es[1].Usage != llmfleet.EstimatedUsage(int64(len(r.Body))) || es[1].PricedTier() != llmfleet.TierStandard {
			t.Fatalf("entries %+v", es)
		}
		givenUpEntry(t, es[0])
		if s := d.Stats(); s.FlexFallbacks != 1 || s.BudgetMisses != 1 {
			t.Fatalf("stats %+v", s)
		}
	})
}

// TestFlexUnsupportedIsLearnt: a model the provider refuses the tier for
// goes standard at once, and is not routed flex again.
func TestFlexUnsupportedIsLearnt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.noFlex = true
		var l ledgerOf
		d := openFlex(t, f, &l)
		start := time.Now()
		resp, err := d.Submit(t.Context(), 2*time.Minute, req("k", "a"))
		if err != nil {
			t.Fatal(err)
		}
		if time.Since(start) != 0 || f.count("flex") != 1 || f.count("send") != 2 || resp.Tier != llmfleet.TierStandard {
			t.Fatalf("after %s: %d flex calls of %d, tier %s", time.Since(start), f.count("flex"), f.count("send"), resp.Tier)
		}
		if r := d.Plan(2*time.Minute, req("k", "b")); r == llmfleet.RouteFlex {
			t.Errorf("Plan after the refusal = flex")
		}
	})
}

// TestObserveFlexFeedsRouting: flex calls the proxy makes itself teach the
// engine their latency.
func TestObserveFlexFeedsRouting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		var l ledgerOf
		d := openFlex(t, f, &l)
		// The prior (60s) and a 32s reserve do not fit a 80s budget.
		if r := d.Plan(80*time.Second, req("k", "a")); r == llmfleet.RouteFlex {
			t.Fatalf("Plan before any flex call = flex")
		}
		for range 5 {
			d.ObserveFlex("fake", "m1", 3*time.Second, nil)
		}
		if r := d.Plan(80*time.Second, req("k", "a")); r != llmfleet.RouteFlex {
			t.Fatalf("Plan after fast flex calls = %s, want flex", r)
		}
	})
}

// TestBatchFailedAsAWhole: the requests of a batch that failed after its
// create go sync when their budget allows, and get the provider's error
// otherwise; no turnaround is learnt from it.
func TestBatchFailedAsAWhole(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.turnaround = func(string) time.Duration { return 10 * time.Second }
		f.failure = &llmfleet.Error{StatusCode: 429, Type: "token_limit_exceeded", Message: "Enqueued token limit reached for m1"}
		var l ledgerOf
		d := &Dispatcher{Providers: []llmfleet.Provider{f}, Observe: l.observe,
			Policy: Policy{BatchMinSize: 2, SyncLatencyPrior: 5 * time.Second, NoRescue: true}}
		if err := d.Open(); err != nil {
			t.Fatal(err)
		}
		defer d.Close(t.Context())
		type out struct {
			resp *llmfleet.Response
			err  error
		}
		patient, unbudgeted := make(chan out, 1), make(chan out, 1)
		go func() {
			r, err := d.SubmitBatch(t.Context(), time.Hour, req("k", "patient"))
			patient <- out{r, err}
		}()
		go func() {
			r, err := d.SubmitBatch(t.Context(), 0, req("k", "unbudgeted"))
			unbudgeted <- out{r, err}
		}()
		p, u := <-patient, <-unbudgeted
		if p.err != nil || p.resp.Route != llmfleet.RouteSync || f.count("send") != 1 {
			t.Fatalf("patient: %+v, %v; %d sends", p.resp, p.err, f.count("send"))
		}
		var pe *llmfleet.Error
		if !errors.As(u.err, &pe) || pe.Type != "token_limit_exceeded" || pe.Message != f.failure.Message {
			t.Fatalf("unbudgeted: %v, want the provider's error", u.err)
		}
		if f.count("create") != 1 {
			t.Fatalf("%d creates", f.count("create"))
		}
		if got := d.predictor.predict("fake", "m1"); got != d.pol.TurnaroundPrior {
			t.Errorf("turnaround learnt from a failed batch: %s", got)
		}
	})
}

// givenUpEntry checks e is the entry of a flex attempt given up once sent
// for a standard call: estimated from its body, in the flex tier, rescue
// "late", its request judged by the answer it got.
func givenUpEntry(t *testing.T, e llmfleet.LedgerEntry) {
	t.Helper()
	if e.Route != llmfleet.RouteFlex || e.PricedTier() != llmfleet.TierFlex || e.Rescue != llmfleet.RescueLate ||
		!e.Estimated || e.Usage.InputTokens == 0 || !e.BudgetMet {
		t.Errorf("entry of the attempt given up: %+v", e)
	}
}
