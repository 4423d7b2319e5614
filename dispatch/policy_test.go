package dispatch

import (
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
)

// t0 is the tables' reference time.
var t0 = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

func TestPolicyRoute(t *testing.T) {
	p := Policy{}.withDefaults() // sync max 5s, slack 10s
	s := time.Second
	for _, c := range []struct {
		budget, predicted, reserve time.Duration
		explore                    bool
		want                       llmfleet.Route
	}{
		{0, s, 0, false, llmfleet.RouteSync},
		{s, 0, 0, false, llmfleet.RouteSync},
		{5 * s, 0, 0, true, llmfleet.RouteSync},  // at the sync max, even exploring
		{6 * s, 0, 0, false, llmfleet.RouteSync}, // under the slack
		{10 * s, 0, 0, false, llmfleet.RouteBatch},
		{2 * time.Minute, 2 * time.Minute, 0, false, llmfleet.RouteSync},
		{130 * s, 2 * time.Minute, 0, false, llmfleet.RouteBatch},
		{130 * s, 2 * time.Minute, 32 * s, false, llmfleet.RouteSync}, // the rescue's reserve does not fit
		{162 * s, 2 * time.Minute, 32 * s, false, llmfleet.RouteBatch},
		{time.Hour, 6 * time.Hour, 32 * s, false, llmfleet.RouteSync},
		{time.Hour, 6 * time.Hour, 32 * s, true, llmfleet.RouteBatch}, // exploring: the rescue keeps the budget
		{40 * s, 6 * time.Hour, 32 * s, true, llmfleet.RouteSync},     // no room for the rescue
	} {
		if got := p.Route(c.budget, c.predicted, c.reserve, c.explore); got != c.want {
			t.Errorf("Route(%s, %s, reserve %s, explore %v) = %s, want %s", c.budget, c.predicted, c.reserve, c.explore, got, c.want)
		}
	}
	if got := (Policy{NoRescue: true}).withDefaults().Route(time.Hour, 6*time.Hour, 0, true); got != llmfleet.RouteSync {
		t.Errorf("exploring without rescue: %s, want sync", got)
	}
}

func TestPolicyOnTimeQuantile(t *testing.T) {
	if q := (Policy{}).withDefaults().OnTimeQuantile(); q != 0.5 {
		t.Errorf("with rescue: %v, want the batch price 0.5", q)
	}
	if q := (Policy{BatchPrice: 0.3}).withDefaults().OnTimeQuantile(); q != 0.3 {
		t.Errorf("batch price 0.3: %v", q)
	}
	if q := (Policy{NoRescue: true}).withDefaults().OnTimeQuantile(); q != 0.9 {
		t.Errorf("without rescue: %v, want the turnaround quantile 0.9", q)
	}
}

func TestPolicyBudget(t *testing.T) {
	for _, c := range []struct {
		def, budget, want time.Duration
	}{
		{0, 0, 0},
		{0, time.Minute, time.Minute},
		{10 * time.Minute, 0, 10 * time.Minute},
		{10 * time.Minute, time.Second, time.Second},
		{-time.Minute, 0, 0},
	} {
		p := Policy{DefaultBudget: c.def}.withDefaults()
		if got := p.Budget(c.budget); got != c.want {
			t.Errorf("DefaultBudget %s: Budget(%s) = %s, want %s", c.def, c.budget, got, c.want)
		}
	}
}

func TestPolicyFlushAt(t *testing.T) {
	p := Policy{BatchWindow: 30 * time.Second, PollInterval: 5 * time.Second}.withDefaults()
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	for _, c := range []struct {
		name  string
		items []Item
		want  time.Time
	}{
		{"empty", nil, time.Time{}},
		{"window from the oldest acceptance", []Item{{Accepted: at(0)}, {Accepted: at(20)}}, at(30)},
		{"no budget, no pull", []Item{{Accepted: at(0), Predicted: time.Hour}}, at(30)},
		{"a budget pulls it forward", []Item{{Accepted: at(0)}, {Accepted: at(1), Deadline: at(150), Predicted: 120 * time.Second}}, at(20)},
		{"and its rescue's reserve", []Item{{Accepted: at(0), Deadline: at(150), Predicted: 120 * time.Second, Reserve: 12 * time.Second}}, at(8)},
		{"a loose budget does not", []Item{{Accepted: at(0), Deadline: at(3600), Predicted: 120 * time.Second}}, at(30)},
		{"a spent budget: now", []Item{{Accepted: at(0), Deadline: at(60), Predicted: 120 * time.Second}}, at(-70)},
	} {
		if got := p.FlushAt(c.items); !got.Equal(c.want) {
			t.Errorf("%s: FlushAt = %s, want %s", c.name, got.Sub(t0), c.want.Sub(t0))
		}
	}
}

func TestPolicyNextCheck(t *testing.T) {
	p := Policy{PollInterval: 5 * time.Second}.withDefaults()
	if got := p.NextCheck(t0).Sub(t0); got != 5*time.Second {
		t.Errorf("NextCheck = +%s, want one poll interval", got)
	}
}

func TestPolicySettled(t *testing.T) {
	p := Policy{SettleDelay: 2 * time.Second}.withDefaults()
	deadline := t0.Add(2 * time.Minute)
	for _, c := range []struct {
		name     string
		answered time.Time
		want     time.Time
	}{
		{"no answer: the deadline", time.Time{}, deadline.Add(2 * time.Second)},
		{"an answer: then", t0.Add(time.Second), t0.Add(3 * time.Second)},
		{"an answer after the deadline", deadline.Add(time.Minute), deadline.Add(2 * time.Second)},
	} {
		if got := p.Settled(deadline, c.answered); !got.Equal(c.want) {
			t.Errorf("%s: Settled = %s, want %s", c.name, got.Sub(t0), c.want.Sub(t0))
		}
	}
}

func TestPolicyRetryAfter(t *testing.T) {
	p := Policy{PollInterval: 5 * time.Second, MaxPollInterval: 30 * time.Second}.withDefaults()
	want := []time.Duration{5 * time.Second, 10 * time.Second, 20 * time.Second, 30 * time.Second, 30 * time.Second}
	for n, w := range want {
		if got := p.RetryAfter(n); got != w {
			t.Errorf("RetryAfter(%d) = %s, want %s", n, got, w)
		}
	}
	if got := p.RetryAfter(1000); got != 30*time.Second {
		t.Errorf("RetryAfter(1000) = %s", got)
	}
}

// The batches of a model still in flight count as turnarounds at least as
// long as their age: while the long ones are out, the early, short samples
// do not make the model look fast.
func TestPredictorCountsBatchesInFlight(t *testing.T) {
	p := newPredictor(2*time.Minute, nil, 0.5, 64)
	for _, d := range []time.Duration{60 * time.Second, 70 * time.Second, 80 * time.Second} {
		p.observe("anthropic", "m", d)
	}
	if got := p.at("anthropic", "m", 0.5); got != 70*time.Second {
		t.Fatalf("median of the samples: %s", got)
	}
	if got := p.atCensored("anthropic", "m", 0.5, []time.Duration{10 * time.Second}); got != 70*time.Second {
		t.Fatalf("a young batch in flight says nothing: %s", got)
	}
	ages := []time.Duration{5 * time.Minute, 6 * time.Minute, 7 * time.Minute}
	if got := p.atCensored("anthropic", "m", 0.5, ages); got != 190*time.Second {
		t.Fatalf("three old batches in flight: median %s, want 3m10s", got)
	}
	if got := p.atCensored("anthropic", "other", 0.5, ages); got != 2*time.Minute {
		t.Fatalf("a model without samples keeps its prior: %s", got)
	}
}

// The share of a model's batches too late for a budget counts its
// batches in flight older than the time the budget leaves: the first
// samples back are the short ones.
func TestLateShareCountsBatchesInFlight(t *testing.T) {
	p := newPredictor(2*time.Minute, nil, 0.5, 64)
	avail := 4 * time.Minute
	if got := p.lateShare("anthropic", "m", avail, nil); got != 0.1 {
		t.Fatalf("no sample, the prior under the time left: %v, want 0.1", got)
	}
	if got := p.lateShare("anthropic", "m", avail, []time.Duration{5 * time.Minute}); got != 0.75 {
		t.Fatalf("no sample, one batch out longer than the time left: %v, want 0.75", got)
	}
	for _, d := range []time.Duration{2 * time.Minute, 3 * time.Minute} {
		p.observe("anthropic", "m", d)
	}
	if got := p.lateShare("anthropic", "m", avail, nil); got != 0.5/3 {
		t.Fatalf("two short samples: %v, want 1/6", got)
	}
	ages := []time.Duration{time.Minute, 5 * time.Minute, 6 * time.Minute}
	if got := p.lateShare("anthropic", "m", avail, ages); got != 2.5/5 {
		t.Fatalf("two short samples, two batches out past the time left (a young one says nothing): %v, want 1/2", got)
	}
}

// TestRouteFlex: flex takes the requests whose budget fits it, batch
// those that flex refuses too often or that prefer it, sync the rest.
func TestRouteFlex(t *testing.T) {
	p := Policy{}.withDefaults()
	flex := Flex{Available: true, Latency: 20 * time.Second}
	reserve := 32 * time.Second // a standard fallback: 30s prior + 2s margin
	for _, c := range []struct {
		name   string
		pol    Policy
		r      llmfleet.Route
		budget time.Duration
		f      Flex
		want   llmfleet.Route
	}{
		{"no flex tier", p, llmfleet.RouteSync, time.Hour, Flex{Latency: time.Second}, llmfleet.RouteSync},
		{"budget under SyncMaxLatency", p, llmfleet.RouteSync, 5 * time.Second, Flex{Available: true}, llmfleet.RouteSync},
		{"budget fits flex", p, llmfleet.RouteSync, time.Minute, flex, llmfleet.RouteFlex},
		{"budget short of flex and fallback", p, llmfleet.RouteSync, 51 * time.Second, flex, llmfleet.RouteSync},
		{"batchable: flex wins", p, llmfleet.RouteBatch, time.Hour, flex, llmfleet.RouteFlex},
		{"batchable, flex refused often", p, llmfleet.RouteBatch, time.Hour, Flex{Available: true, Latency: 20 * time.Second, Refusal: 0.6}, llmfleet.RouteBatch},
		{"not batchable, flex refused often", p, llmfleet.RouteSync, time.Minute, Flex{Available: true, Latency: 20 * time.Second, Refusal: 0.9}, llmfleet.RouteFlex},
		{"batch preferred", Policy{PreferBatch: true}.withDefaults(), llmfleet.RouteBatch, time.Hour, flex, llmfleet.RouteBatch},
		{"batch preferred, too short to batch", Policy{PreferBatch: true}.withDefaults(), llmfleet.RouteSync, time.Minute, flex, llmfleet.RouteFlex},
	} {
		if got := c.pol.RouteFlex(c.r, c.budget, reserve, c.f); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
	if got := []time.Duration{p.FlexRetryAfter(0), p.FlexRetryAfter(1), p.FlexRetryAfter(10)}; got[0] != time.Second || got[1] != 2*time.Second || got[2] != p.MaxPollInterval {
		t.Errorf("FlexRetryAfter: %v", got)
	}
}
