package simulate

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/cachesim"
	"github.com/llmfleet/llmfleet/dispatch"
	"github.com/llmfleet/llmfleet/pricing"
)

func TestDelays(t *testing.T) {
	u := rangeDelays(0, 10*time.Second)
	run := runDelays(time.Minute, time.Minute, Straggler{})
	strag := runDelays(time.Minute, time.Minute, Straggler{Fraction: 0.5, Factor: 10})
	for _, tc := range []struct {
		name string
		got  float64
		want float64
	}{
		{"uniform below its middle", u.below(float64(5 * time.Second)), 0.5},
		{"uniform below its start", u.below(0), 0},
		{"uniform below its end", u.below(float64(11 * time.Second)), 1},
		{"U·T below T/2", run.below(float64(30 * time.Second)), 0.5},
		{"U·T below T", run.below(float64(time.Minute) + 1), 1},
		{"stragglers: half the runs past T", strag.below(float64(time.Minute) + 1), 0.5 + 0.5*0.1},
		{"sum with none", u.sumBelow(nil, float64(5*time.Second)), 0.5},
		{"sum of two uniforms below the top", u.sumBelow(&u, float64(20*time.Second)+1), 1},
		{"sum of two uniforms below the middle", u.sumBelow(&u, float64(10*time.Second)), 0.5},
	} {
		if math.Abs(tc.got-tc.want) > 0.03 {
			t.Errorf("%s: %.3f, want %.3f", tc.name, tc.got, tc.want)
		}
	}
}

// The best router on small cases computed by hand (Sonnet 4.6: $3 input,
// $15 output, $3.75 5m writes, $6 1h writes, $0.30 reads per MTok; batch
// half of each). Two turns of cachedTurn: a 1000-token system prompt (1h,
// shared, so warm), 500 new tokens a turn (5m), 100 output tokens.
func TestBestCached(t *testing.T) {
	const (
		// Turn 0 reads the system prompt, writes its 500 tokens.
		turn0 = (1000*0.3 + 500*3.75 + 1*3 + 100*15) / 1e6
		// Turn 1 reads turn 0's prompt, writes its 500 tokens.
		turn1Hit = (1500*0.3 + 500*3.75 + 1*3 + 100*15) / 1e6
		// Turn 1 after turn 0's entry lapsed: reads the system prompt,
		// writes the 1000 tokens past it.
		turn1Lapsed = (1000*0.3 + 1000*3.75 + 1*3 + 100*15) / 1e6
	)
	agent := func(budget, think time.Duration) []Turn {
		a, b := cachedTurn("a", 0), cachedTurn("a", 1)
		a.BudgetMS, b.BudgetMS, b.ThinkMS = budget.Milliseconds(), budget.Milliseconds(), think.Milliseconds()
		return []Turn{a, b}
	}
	rates := func(batch float64) *cachesim.Config { return &cachesim.Config{SyncHitRate: 1, BatchHitRate: batch} }
	for _, tc := range []struct {
		name   string
		turns  []Turn
		cache  *cachesim.Config
		routes map[string]int
		cost   float64
	}{
		{"budgets of seconds go sync", agent(5*time.Second, 10*time.Second), rates(1),
			map[string]int{"sync": 2, "flex": 0, "batch": 0}, turn0 + turn1Hit},
		{"a batch that misses every time costs more", agent(24*time.Hour, 10*time.Second), rates(0),
			map[string]int{"sync": 2, "flex": 0, "batch": 0}, turn0 + turn1Hit},
		{"turns far apart lose their entry anyway: batch them", agent(24*time.Hour, 20*time.Minute), rates(1),
			map[string]int{"sync": 0, "flex": 0, "batch": 2}, (turn0 + turn1Lapsed) / 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, ok := BestCached(Config{Cache: tc.cache}, tc.turns)
			if !ok {
				t.Fatal("unknown")
			}
			if !reflect.DeepEqual(rep.Routes, tc.routes) || math.Abs(rep.CostUSD-tc.cost) > 1e-9 {
				t.Fatalf("routes %v cost %.9f, want %v %.9f", rep.Routes, rep.CostUSD, tc.routes, tc.cost)
			}
			if rep.Policy != BestName || rep.Requests != 2 || rep.BudgetMisses != 0 {
				t.Errorf("report %+v", rep)
			}
		})
	}
	if _, ok := BestCached(Config{Turnaround: func(string, *rand.Rand) time.Duration { return 0 }}, agent(time.Hour, 0)); ok {
		t.Error("a draw without its range: known")
	}
}

// On the agents-cached workload, at each batch hit rate of the table in
// docs/simulation.md: the all-sync run pays the sync price of the usages
// it got; the best router is never above all-sync, the oracle never above
// the best router; cache-blind batching at 0.3 costs more than all-sync,
// as the issue reports.
func TestCompareAgentsCached(t *testing.T) {
	turns := AgentsCached(60, 10, 1)
	for _, rate := range []float64{0.3, 0.5, 0.7, 0.9} {
		t.Run(fmt.Sprint(rate), func(t *testing.T) {
			t.Parallel() // the comparisons share nothing
			compareAgentsCached(t, turns, rate)
		})
	}
}

// Two comparisons of one workload report the same.
func TestCompareIsDeterministic(t *testing.T) {
	turns := AgentsCached(15, 6, 2)
	base := Config{Seed: 2, Cache: &cachesim.Config{SyncHitRate: 1, BatchHitRate: 0.5}}
	blind := base
	blind.Name, blind.Policy.CacheBlind = CacheBlindName, true
	reps, err := Compare(base, turns, []Config{blind})
	if err != nil {
		t.Fatal(err)
	}
	again, err := Compare(base, turns, []Config{blind})
	if err != nil || !reflect.DeepEqual(again, reps) {
		t.Errorf("two comparisons differ: %v", err)
	}
}

// compareAgentsCached checks the comparison of the cached-agents
// workload turns at a batch hit rate.
func compareAgentsCached(t *testing.T, turns []Turn, rate float64) {
	base := Config{Seed: 1, Cache: &cachesim.Config{SyncHitRate: 1, BatchHitRate: rate}}
	blind := base
	blind.Name, blind.Policy.CacheBlind = CacheBlindName, true
	reps, err := Compare(base, turns, []Config{blind})
	if err != nil {
		t.Fatal(err)
	}
	all, cb, best, oracle := reps[0], reps[1], reps[2], reps[3]
	t.Logf("batch hit rate %.1f: all-sync $%.2f, cache-blind $%.2f (%d batched), best $%.2f (%d batched)",
		rate, all.CostUSD, cb.CostUSD, cb.Routes["batch"], best.CostUSD, best.Routes["batch"])
	if all.Policy != AllSyncName || all.Routes["sync"] != 600 || all.SavedUSD != 0 || cb.SyncEquivalentUSD != all.CostUSD {
		t.Errorf("all-sync report %+v", all)
	}
	if oracle.Policy != OracleName || oracle.CostUSD > best.CostUSD+1e-9 || rate == 0.9 && oracle.CostUSD >= best.CostUSD {
		t.Errorf("the oracle $%.4f above the best router $%.4f", oracle.CostUSD, best.CostUSD)
	}
	if best.CostUSD > all.CostUSD || (best.SavedUSD > 0) != (best.SavedOfBound == 1) || cb.BoundSavedUSD != best.SavedUSD {
		t.Errorf("best $%.4f above all-sync $%.4f, or its saving misreported: %+v", best.CostUSD, all.CostUSD, best)
	}
	if rate == 0.3 && cb.CostUSD <= all.CostUSD {
		t.Errorf("cache-blind batching at 0.3: $%.2f, not above all-sync $%.2f", cb.CostUSD, all.CostUSD)
	}
	if cb.Cache["batch"].HitRate >= cb.Cache["sync"].HitRate {
		t.Errorf("batch hit rate %v not below sync's %v", cb.Cache["batch"], cb.Cache["sync"])
	}
}

// The all-sync run pays, for every turn, the sync price of the usage the
// provider's cache gave it.
func TestAllSyncPaysSyncPrices(t *testing.T) {
	turns := AgentsCached(12, 6, 3)
	prices := pricing.Default()
	var sum float64
	n := 0
	cfg := Config{Name: AllSyncName, Policy: AllSync(dispatch.Policy{}), Seed: 3, Entries: func(e llmfleet.LedgerEntry) {
		c, ok := prices.Cost(e.Provider, e.Model, e.Usage, llmfleet.RouteSync)
		if !ok || e.Route != llmfleet.RouteSync {
			t.Errorf("entry %+v: priced %v", e, ok)
		}
		sum += c
		n++
	}}
	rep := run(t, cfg, turns)
	if n != len(turns) || math.Abs(rep.CostUSD-sum) > 1e-6 || rep.Cache["sync"].Answers != n {
		t.Fatalf("%d entries summing $%.6f, report $%.6f, cache %+v", n, sum, rep.CostUSD, rep.Cache)
	}
}
