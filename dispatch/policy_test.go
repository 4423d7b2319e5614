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
	for _, c := range []struct {
		budget, predicted time.Duration
		want              llmfleet.Route
	}{
		{0, time.Second, llmfleet.RouteSync},
		{time.Second, 0, llmfleet.RouteSync},
		{5 * time.Second, 0, llmfleet.RouteSync},
		{6 * time.Second, 0, llmfleet.RouteSync}, // under the slack
		{10 * time.Second, 0, llmfleet.RouteBatch},
		{2 * time.Minute, 2 * time.Minute, llmfleet.RouteSync},
		{130 * time.Second, 2 * time.Minute, llmfleet.RouteBatch},
		{time.Hour, 6 * time.Hour, llmfleet.RouteSync},
	} {
		if got := p.Route(c.budget, c.predicted); got != c.want {
			t.Errorf("Route(%s, %s) = %s, want %s", c.budget, c.predicted, got, c.want)
		}
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
		{"a loose budget does not", []Item{{Accepted: at(0), Deadline: at(3600), Predicted: 120 * time.Second}}, at(30)},
		{"a spent budget: now", []Item{{Accepted: at(0), Deadline: at(60), Predicted: 120 * time.Second}}, at(-70)},
	} {
		if got := p.FlushAt(c.items); !got.Equal(c.want) {
			t.Errorf("%s: FlushAt = %s, want %s", c.name, got.Sub(t0), c.want.Sub(t0))
		}
	}
}

func TestPolicyNextCheck(t *testing.T) {
	p := Policy{PollInterval: 5 * time.Second, MaxPollInterval: 30 * time.Second}.withDefaults()
	for _, c := range []struct {
		age, predicted, want time.Duration
	}{
		{0, 120 * time.Second, 30 * time.Second},                 // half of 120s, capped at 30s
		{100 * time.Second, 120 * time.Second, 10 * time.Second}, // half the 20s left
		{118 * time.Second, 120 * time.Second, 5 * time.Second},  // at least the poll interval
		{200 * time.Second, 120 * time.Second, 20 * time.Second}, // a quarter of the 80s overrun
		{0, 6 * time.Hour, 36 * time.Minute},                     // a tenth of the expected age
		{10 * time.Hour, time.Hour, time.Hour},                   // a tenth of the actual age
	} {
		now := t0.Add(c.age)
		if got := p.NextCheck(t0, c.predicted, now).Sub(now); got != c.want {
			t.Errorf("NextCheck(age %s, predicted %s) = +%s, want +%s", c.age, c.predicted, got, c.want)
		}
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

// The waiter's moves are the state machine the package doc describes.
func TestWaiterMoves(t *testing.T) {
	for _, c := range []struct {
		from, to waiterState
		ok       bool
	}{
		{stateQueued, stateSubmitting, true},
		{stateQueued, stateInFlight, false},
		{stateSubmitting, stateReconciling, true},
		{stateSubmitting, stateQueued, false},
		{stateReconciling, stateQueued, true},
		{stateReconciling, stateInFlight, true},
		{stateInFlight, stateDone, true},
		{stateInFlight, stateQueued, false},
		{stateDone, stateQueued, false},
		{stateDone, stateDone, false},
	} {
		w := &waiter{state: c.from}
		if got := w.to(c.to); got != c.ok || (got && w.state != c.to) || (!got && w.state != c.from) {
			t.Errorf("%s → %s: %v (state %s)", c.from, c.to, got, w.state)
		}
	}
}
