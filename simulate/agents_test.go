package simulate

import (
	"reflect"
	"testing"
	"time"
)

// The agents-cached workload: the scenario, reproducible by seed.
func TestAgentsCached(t *testing.T) {
	a, b := AgentsCached(60, 10, 1), AgentsCached(60, 10, 1)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("the same seed gave two workloads")
	}
	if reflect.DeepEqual(a, AgentsCached(60, 10, 2)) {
		t.Fatal("two seeds gave the same workload")
	}
	if len(a) != 600 {
		t.Fatalf("%d turns", len(a))
	}
	systems, budgets := map[string]bool{}, map[int64]bool{}
	var last int64
	for i, tn := range a {
		if err := tn.check(); err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
		systems[tn.System+"/"+tn.Model+"/"+tn.Key] = true
		budgets[tn.BudgetMS] = true
		if tn.Turn > 0 {
			prev := a[i-1]
			if prev.Agent != tn.Agent || tn.HistoryTokens != prev.HistoryTokens+prev.NewTokens || tn.NewTokens <= prev.OutputTokens ||
				tn.Breakpoints[1].Tokens != prev.InputTokens || tn.BudgetMS != prev.BudgetMS || tn.ThinkMS < 5000 {
				t.Fatalf("turn %d does not continue turn %d: %+v after %+v", i, i-1, tn, prev)
			}
		}
		if tn.Turn == 9 {
			last += tn.InputTokens
		}
	}
	if mean := last / 60; mean < 30_000 || mean > 40_000 {
		t.Errorf("last prompts average %d tokens, want about 35,000", mean)
	}
	if len(systems) != 3 {
		t.Errorf("systems %v", systems)
	}
	if !budgets[(5*time.Second).Milliseconds()] || !budgets[(4*time.Hour).Milliseconds()] || len(budgets) < 6 {
		t.Errorf("budgets %v, want seconds to hours", budgets)
	}
}

func TestGenerate(t *testing.T) {
	for _, tc := range []struct {
		spec   string
		ok     bool
		turns  int
		hasErr bool
	}{
		{"agents-cached", true, 600, false},
		{"agents-cached:3x2", true, 6, false},
		{"agents-cached:0x2", true, 0, true},
		{"agents-cached:3", true, 0, true},
		{"agents-cached:ax2", true, 0, true},
		{"agents-cached:2000x1000", true, 0, true},
		{"agents-cached:", true, 0, true},
		{"workload.jsonl", false, 0, false},
		{"agents-cachedX", false, 0, false},
		{"", false, 0, false},
	} {
		turns, ok, err := Generate(tc.spec, 1)
		if ok != tc.ok || (err != nil) != tc.hasErr || len(turns) != tc.turns {
			t.Errorf("%q: %d turns, %v, %v", tc.spec, len(turns), ok, err)
		}
	}
}

// FuzzGenerator: any spec is read or refused, never a panic, and never
// asks for more than maxGenerated turns.
func FuzzGenerator(f *testing.F) {
	for _, s := range []string{"agents-cached", "agents-cached:60x10", "agents-cached:-1x3", "x:1x1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		a, n, ok, err := parseGenerator(spec)
		if ok && err == nil && (a <= 0 || n <= 0 || a*n > maxGenerated) {
			t.Fatalf("%q: %d x %d", spec, a, n)
		}
	})
}
