// Package simrun is what "llmfleet simulate" does once its flags are
// parsed: the policies by name, the workload replayed from a serve
// database's ledger, the runs, and the tables it prints.
package simrun

import (
	"fmt"

	"github.com/llmfleet/llmfleet/simulate"
)

// PolicyConfig is base under the policy name: llmfleet, prefer-batch,
// cache-blind, all-sync or seed.
func PolicyConfig(base simulate.Config, name string) (simulate.Config, error) {
	cfg := base
	cfg.Name = name
	switch name {
	case "llmfleet":
	case "prefer-batch":
		cfg.Policy.PreferBatch = true
	case simulate.CacheBlindName:
		cfg.Policy.CacheBlind = true
	case simulate.AllSyncName:
		cfg.Policy = simulate.AllSync(cfg.Policy)
	case "seed":
		cfg.Policy = simulate.SeedPolicy(cfg.Policy)
	default:
		return cfg, fmt.Errorf("--policy: unknown policy %q (llmfleet, prefer-batch, cache-blind, all-sync, seed)", name)
	}
	return cfg, nil
}

// Run runs each of runs on turns: compared with all-sync and the best
// router (simulate.Compare) when the workload has prompt structures
// (cached).
func Run(base simulate.Config, turns []simulate.Turn, runs []simulate.Config, cached bool) ([]simulate.Report, error) {
	if cached {
		return simulate.Compare(base, turns, runs)
	}
	var reports []simulate.Report
	for _, cfg := range runs {
		rep, err := simulate.Run(cfg, turns)
		if err != nil {
			return nil, fmt.Errorf("policy %s: %w", cfg.Name, err)
		}
		reports = append(reports, rep)
	}
	return reports, nil
}
