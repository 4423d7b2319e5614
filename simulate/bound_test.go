package simulate

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

func TestLateProbability(t *testing.T) {
	const m = time.Minute
	none := Straggler{}
	strag := Straggler{Fraction: 0.1, Factor: 10}
	for _, c := range []struct {
		name   string
		avail  time.Duration
		lo, hi time.Duration
		s      Straggler
		want   float64
	}{
		{"uniform, below the range", 1 * m, 2 * m, 10 * m, none, 1},
		{"uniform, negative time left", -5 * time.Second, 2 * m, 10 * m, none, 1},
		{"uniform, at its bottom", 2 * m, 2 * m, 10 * m, none, 1},
		{"uniform, within", 4 * m, 2 * m, 10 * m, none, 0.75},
		{"uniform, at its top", 10 * m, 2 * m, 10 * m, none, 0},
		{"uniform, above", time.Hour, 2 * m, 10 * m, none, 0},
		{"fixed, below", 1 * m, 2 * m, 2 * m, none, 1},
		{"fixed, at it", 2 * m, 2 * m, 2 * m, none, 0},
		{"stragglers, below the range", 1 * m, 2 * m, 10 * m, strag, 1},
		// 0.9·(6/8) + 0.1·1: a straggler takes 20m-100m.
		{"stragglers, within the range", 4 * m, 2 * m, 10 * m, strag, 0.9*0.75 + 0.1},
		// Every plain batch is in time; stragglers over 30m: 70/80.
		{"stragglers, above the range, within theirs", 30 * m, 2 * m, 10 * m, strag, 0.1 * 70.0 / 80},
		{"stragglers, above theirs", 100 * m, 2 * m, 10 * m, strag, 0},
		{"every batch a straggler", 60 * m, 2 * m, 10 * m, Straggler{Fraction: 1, Factor: 10}, 40.0 / 80},
		{"factor 1", 4 * m, 2 * m, 10 * m, Straggler{Fraction: 0.5, Factor: 1}, 0.75},
	} {
		if got := lateProbability(c.avail, c.lo, c.hi, c.s); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%s: P(late) = %v, want %v", c.name, got, c.want)
		}
	}
}

// The bound is between 0 and what batching everything in time would save;
// with budgets of hours no batch is ever late and it is exactly that.
func TestBoundLimits(t *testing.T) {
	strag := Straggler{Fraction: 0.05, Factor: 10}
	turns := Fleet(20, 3, 1)
	rep := run(t, Config{Name: "llmfleet", Seed: 1, Straggler: strag}, turns)
	if rep.BoundSavedUSD <= 0 || rep.BoundSavedUSD > rep.SyncEquivalentUSD*0.5+1e-9 {
		t.Errorf("bound %v, sync equivalent %v", rep.BoundSavedUSD, rep.SyncEquivalentUSD)
	}
	if want := rep.SavedUSD / rep.BoundSavedUSD; rep.SavedOfBound != want {
		t.Errorf("saved of bound %v, want %v", rep.SavedOfBound, want)
	}

	for i := range turns {
		turns[i].BudgetMS = (6 * time.Hour).Milliseconds()
	}
	rep = run(t, Config{Name: "llmfleet", Seed: 1, Straggler: strag}, turns)
	if want := rep.SyncEquivalentUSD * 0.5; math.Abs(rep.BoundSavedUSD-want) > 1e-6 {
		t.Errorf("budgets of hours: bound %v, want sync equivalent %v / 2", rep.BoundSavedUSD, rep.SyncEquivalentUSD)
	}

	// Budgets at or under SyncMaxLatency save nothing.
	for i := range turns {
		turns[i].BudgetMS = 5000
	}
	if b, ok := Bound(Config{}, turns); !ok || b != 0 {
		t.Errorf("budgets of 5s: bound %v, %v", b, ok)
	}
	// A draw function without its range: not known.
	cfg := Config{Turnaround: func(string, *rand.Rand) time.Duration { return time.Minute }}
	if _, ok := Bound(cfg, turns); ok {
		t.Error("bound known without the turnaround range")
	}
}
