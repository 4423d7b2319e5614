package simulate

import (
	"fmt"
	"math"

	"github.com/llmfleet/llmfleet/dispatch"
)

// Names of the reference policies of Compare.
const (
	// AllSyncName names the run that sends every turn sync, with the
	// client's own caching.
	AllSyncName = "all-sync"
	// CacheBlindName names the engine routing as if prompts were never
	// cached (dispatch.Policy.CacheBlind).
	CacheBlindName = "cache-blind"
)

// AllSync returns base with every budget going sync.
func AllSync(base dispatch.Policy) dispatch.Policy {
	p := base
	p.SyncMaxLatency = math.MaxInt64
	return p
}

// Compare runs a workload with prompt structures under a sync-only
// policy and under each of runs (configurations of the same provider and
// cache that differ in Name and Policy), and computes the best router
// that knows the cache model (BestCached) and the oracle (OracleCached)
// under base. It returns the all-sync report, the runs' reports in
// order, then the best router's and the oracle's.
//
// What each saved is measured against the all-sync run on the same
// workload and seed: SyncEquivalentUSD is that run's cost, SavedUSD the
// difference (not the ledger's counterfactual, which prices a batched
// turn's cache misses at the sync price although the sync route would
// have read its cache), BoundSavedUSD the best router's saving and
// SavedOfBound the share of it saved.
func Compare(base Config, turns []Turn, runs []Config) ([]Report, error) {
	all := base
	all.Name, all.Policy = AllSyncName, AllSync(base.Policy)
	reports := make([]Report, 0, len(runs)+2)
	for _, cfg := range append([]Config{all}, runs...) {
		r, err := Run(cfg, turns)
		if err != nil {
			return nil, fmt.Errorf("policy %s: %w", cfg.Name, err)
		}
		reports = append(reports, r)
	}
	bestRep, ok := BestCached(base, turns)
	if !ok {
		return nil, fmt.Errorf("the best router needs the distributions: give ranges, not draw functions")
	}
	oracle, _ := OracleCached(base, turns)
	reports = append(reports, bestRep, oracle)
	baseline := reports[0].CostUSD
	// The best router's and the oracle's saving is against all-sync
	// under their own model, so that what the model leaves out (pooling,
	// the cold start of shared prefixes) is not counted a saving.
	for i := len(reports) - 2; i < len(reports); i++ {
		r := &reports[i]
		r.CostUSD = roundNano(baseline - (r.ModelSyncUSD - r.CostUSD))
	}
	bestSaved := baseline - reports[len(reports)-2].CostUSD
	for i := range reports {
		r := &reports[i]
		r.SyncEquivalentUSD = baseline
		r.SavedUSD = roundNano(baseline - r.CostUSD)
		r.BoundSavedUSD = roundNano(bestSaved)
		r.SavedOfBound = 0
		if bestSaved > 0 {
			r.SavedOfBound = r.SavedUSD / r.BoundSavedUSD
		}
	}
	return reports, nil
}

// roundNano rounds dollars to the nano-dollar, as the reports sum them.
func roundNano(usd float64) float64 { return math.Round(usd*1e9) / 1e9 }
