package llmfleet

import (
	"fmt"
	"testing"
)

func TestUsageCacheWrites(t *testing.T) {
	split := func(total, m5, h1 int64) Usage {
		var u Usage
		u.CacheCreationInputTokens = total
		u.CacheCreation.Ephemeral5mInputTokens = m5
		u.CacheCreation.Ephemeral1hInputTokens = h1
		return u
	}
	for _, c := range []struct {
		u        Usage
		m5, h1   int64
		describe string
	}{
		{split(0, 0, 0), 0, 0, "none"},
		{split(1000, 0, 0), 1000, 0, "total only counts as 5m"},
		{split(1000, 400, 600), 400, 600, "split"},
		{split(0, 0, 700), 0, 700, "split without total"},
		{split(1000, 0, 600), 400, 600, "remainder counts as 5m"},
	} {
		m5, h1 := c.u.CacheWrites()
		if m5 != c.m5 || h1 != c.h1 {
			t.Errorf("%s: got %d/%d, want %d/%d", c.describe, m5, h1, c.m5, c.h1)
		}
	}
}

// A cut call's estimate is a quarter of its body's bytes in input tokens,
// rounded up, and no output.
func TestEstimatedUsage(t *testing.T) {
	for n, want := range map[int64]int64{-1: 0, 0: 0, 1: 1, 4: 1, 5: 2, 4000: 1000} {
		if u := EstimatedUsage(n); u != (Usage{InputTokens: want}) {
			t.Errorf("EstimatedUsage(%d) = %+v, want %d input tokens", n, u, want)
		}
	}
}

// A call cut by the upstream timeout has the outcome of the faces' 504.
func TestOutcomeUpstreamTimeout(t *testing.T) {
	if got := Outcome(fmt.Errorf("sync: %w", ErrUpstreamTimeout)); got != "timeout_error" {
		t.Fatalf("outcome %q", got)
	}
}

func TestPaidUndelivered(t *testing.T) {
	in := LedgerEntry{RequestID: "r1", Route: RouteFlex, Tier: TierFlex, Outcome: "timeout_error",
		Usage: Usage{InputTokens: 9, OutputTokens: 9}}
	e := in.PaidUndelivered(400)
	want := in
	want.Rescue, want.BudgetMet, want.Estimated = RescueLate, true, true
	want.Usage = Usage{InputTokens: 100}
	if e != want {
		t.Errorf("PaidUndelivered = %+v, want %+v", e, want)
	}
}
