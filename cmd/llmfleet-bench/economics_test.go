package main

import (
	"strings"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet/dispatch"
	"github.com/llmfleet/llmfleet/simulate"
)

func TestScaleTurns(t *testing.T) {
	in := []simulate.Turn{{Agent: "a", AtMS: 600_000, ThinkMS: 30, BudgetMS: 5_000, InputTokens: 900, OutputTokens: 90}}
	got := scaleTurns(in, 60)[0]
	if got.AtMS != 10_000 || got.ThinkMS != 1 || got.BudgetMS != 83 {
		t.Errorf("scaled turn = at %d think %d budget %d, want 10000 1 83", got.AtMS, got.ThinkMS, got.BudgetMS)
	}
	if got.InputTokens != 900 || got.OutputTokens != 90 {
		t.Errorf("scaling changed the usage: %+v", got)
	}
	if in[0].AtMS != 600_000 {
		t.Errorf("scaleTurns changed its input")
	}
}

func TestScalePolicy(t *testing.T) {
	p := scalePolicy(dispatch.Policy{}, 60)
	for name, c := range map[string]struct{ got, want time.Duration }{
		"sync max":       {p.SyncMaxLatency, 83 * time.Millisecond},
		"window":         {p.BatchWindow, 500 * time.Millisecond},
		"poll":           {p.PollInterval, 83 * time.Millisecond},
		"max poll":       {p.MaxPollInterval, 500 * time.Millisecond},
		"prior":          {p.TurnaroundPrior, 2 * time.Second},
		"create timeout": {p.CreateTimeout, 2 * time.Second},
		"sync prior":     {p.SyncLatencyPrior, 500 * time.Millisecond},
		"rescue margin":  {p.RescueMargin, 33 * time.Millisecond},
		"settle":         {p.SettleDelay, 33 * time.Millisecond},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", name, c.got, c.want)
		}
	}
	if p.BatchMinSize != 10 || p.BatchMaxSize != 100 {
		t.Errorf("sizes changed: %d %d", p.BatchMinSize, p.BatchMaxSize)
	}
	args := strings.Join(policyArgs(p), " ")
	if !strings.Contains(args, "--rescue-margin 33ms") || !strings.Contains(args, "--batch-window 500ms") {
		t.Errorf("policyArgs = %s", args)
	}
}

func TestScaleRangeSpec(t *testing.T) {
	got, err := scaleRangeSpec("2m-10m,claude-opus-4-6=5m", 60)
	if err != nil || got != "2s-10s,claude-opus-4-6=5s" {
		t.Errorf("scaleRangeSpec = %q, %v", got, err)
	}
	if _, err := scaleRangeSpec("soon", 60); err == nil {
		t.Error("scaleRangeSpec accepted a bad range")
	}
}

func TestRouteAgreement(t *testing.T) {
	sim := figures{Requests: 600, Batch: 300, Sync: 300}
	real := figures{Requests: 600, Batch: 288, Sync: 312}
	if got := routeAgreement(sim, real); got != 0.98 {
		t.Errorf("routeAgreement = %v, want 0.98", got)
	}
	if got := routeAgreement(figures{}, figures{}); got != 1 {
		t.Errorf("routeAgreement of nothing = %v, want 1", got)
	}
	var b strings.Builder
	if err := writeComparison(&b, sim, real, figures{Requests: 600}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "route agreement, simulate vs serve: 98.0% (|batch difference| 12 of 600 requests)") {
		t.Errorf("comparison:\n%s", b.String())
	}
}

func TestParseStraggler(t *testing.T) {
	if s, err := simulate.ParseStraggler("0.05:10x"); err != nil || s.Fraction != 0.05 || s.Factor != 10 {
		t.Errorf("parseStraggler = %+v, %v", s, err)
	}
	if s, err := simulate.ParseStraggler(""); err != nil || s.Fraction != 0 {
		t.Errorf("empty: %+v, %v", s, err)
	}
	if _, err := simulate.ParseStraggler("5%"); err == nil {
		t.Error("accepted 5%")
	}
}
