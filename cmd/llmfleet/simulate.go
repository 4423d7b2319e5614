package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/llmfleet/llmfleet/cachesim"
	"github.com/llmfleet/llmfleet/emulator"
	"github.com/llmfleet/llmfleet/internal/simrun"
	"github.com/llmfleet/llmfleet/simulate"
)

func init() { commands["simulate"] = runSimulate }

const simulateUsage = `usage: llmfleet simulate (--workload FILE|GENERATOR | --fleet AGENTSxTURNS | --from-ledger [--db PATH] [--since D]) [flags]

Runs the dispatcher (the engine of llmfleet serve: policy, pools, polling,
rescue) on a virtual clock against a simulated provider, and prints what
the workload would have cost and which budgets would have broken, per
policy: a table, or with --json one JSON object a line, one per policy.

A workload is JSON lines, one request (an agent's turn) a line:
  {"agent": "a1", "turn": 0, "at_ms": 0, "think_ms": 0, "model": "claude-sonnet-4-6",
   "budget_ms": 600000, "input_tokens": 1200, "output_tokens": 300, "key": "k1"}
An agent's first turn arrives at_ms after the start; each later turn
think_ms after the agent's previous turn was answered.

A turn may carry its prompt's structure instead of cache usage: "system"
(a system prompt its agents share), "system_tokens", "history_tokens"
(the conversation so far), "new_tokens" (input_tokens is their sum) and
"breakpoints" ([{"tokens": 9000, "ttl": "1h"}, ...]). The simulated
provider's prompt cache, llmfleet emulate's, then computes its usage (see
--cache-*). --workload agents-cached[:AGENTSxTURNS] generates such a
workload (default 60x10; see simulate.AgentsCached; a file of that name:
./agents-cached). On it, the policies (default cache-blind,llmfleet) are
compared with all-sync (every turn sync, with the client's caching; run
first) and "best", the best router that knows the cache model (see
simulate.BestCached): "saved" is against all-sync, "% of best" over best's.

--from-ledger replays the traffic a deployment recorded in its ledger
(the database of "llmfleet serve", which must not be running): each entry
becomes a one-turn request arriving when the recorded one arrived, with
its model, budget and usage (sync entries carry no budget: they replay
sync).

On other workloads "bound" is what the best router with a sync fallback
could expect to save, knowing the --turnaround, --straggler and
--sync-latency distributions but not the draws (see simulate.Bound);
"% of bound" is "saved" over it.

` + envUsage + `
flags:
`

// simFlags are the flags of llmfleet simulate.
type simFlags struct {
	workload, fleet, provider, flexLat, turn, syncLat, straggler *string
	dbPath, since, policies                                      *string
	flexRefusal                                                  *float64
	seed                                                         *uint64
	fromLedger, asJSON                                           *bool
	flexSet                                                      bool // --flex-latency was given
	pf                                                           *policyFlags
	cf                                                           *cacheFlags
}

// simulateCacheDefaults are simulate's cache flag defaults: those of the
// emulator but for batch hits, best effort, at 0.5.
var simulateCacheDefaults = cachesim.Config{SyncHitRate: 1, BatchHitRate: 0.5}

func addSimulateFlags(fs *flag.FlagSet) *simFlags {
	return &simFlags{
		workload:    fs.String("workload", "", "workload file, JSON lines ('-': standard input), or a generator: agents-cached[:AGENTSxTURNS]"),
		fleet:       fs.String("fleet", "", "generate the workload instead: AGENTSxTURNS dependent turns (e.g. 100x6), 3 models of --provider, budgets from 5s to 24h"),
		provider:    fs.String("provider", "anthropic", "the simulated provider, whose prices apply: anthropic, openai or gemini (whose flex tiers the engine may route to; gemini's takes minutes, its calls bounded by the 20m upstream timeout the provider states for its flex tier, as in serve)"),
		flexLat:     fs.String("flex-latency", "3s-30s", "latency of a flex call (--provider openai or gemini), in the shape of --turnaround (default for gemini: 1m-15m, the API's target)"),
		flexRefusal: fs.Float64("flex-refusal", 0, "fraction of flex calls refused for lack of capacity (429, unbilled), from 0 to 1"),
		turn:        fs.String("turnaround", "2m-10m", `batch turnaround: a duration ("5m") or a uniform range ("2m-10m"), for every model, then model=range pairs for some ("2m-10m,claude-opus-4-6=5m-20m")`),
		syncLat:     fs.String("sync-latency", "1s-3s", "latency of a sync call, in the shape of --turnaround"),
		straggler:   fs.String("straggler", "", "FRACTION:FACTORx: that fraction of the batches take FACTOR times their turnaround (e.g. 0.05:10x)"),
		seed:        fs.Uint64("seed", 1, "seed of the simulated provider's draws (and of --fleet and the workload generators)"),
		fromLedger:  fs.Bool("from-ledger", false, "replay the ledger of --db instead of a workload"),
		dbPath:      fs.String("db", "", "with --from-ledger: SQLite database of llmfleet serve (default: llmfleet/llmfleet.db in $XDG_DATA_HOME or ~/.local/share)"),
		since:       fs.String("since", "0", `with --from-ledger: replay the last DURATION ("24h", "7d"; "0": all of it)`),
		policies: fs.String("policy", "llmfleet", "policies to simulate, comma-separated: llmfleet (the policy the flags set: flex preferred to batch where both keep the budget), "+
			"prefer-batch (the same, batch preferred to flex), cache-blind (the same, routing as if prompts were never cached), all-sync (every budget sync), "+
			"seed (sync iff budget <= 5s, else batch, one pool per key flushed every 30s, no learning, no rescue); "+
			"on a workload with prompt structures, default cache-blind,llmfleet, after all-sync"),
		asJSON: fs.Bool("json", false, "print one JSON object per policy instead of a table"),
		pf:     addPolicyFlags(fs),
		cf:     addCacheFlags(fs, simulateCacheDefaults),
	}
}

// runSimulate runs a simulation and prints its report.
func runSimulate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("simulate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), simulateUsage)
		fs.PrintDefaults()
	}
	f := addSimulateFlags(fs)
	if err := parseFlags(fs, args, os.Getenv); err != nil {
		return err
	}
	f.flexSet = flagSet(fs, "flex-latency")
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	base, err := f.baseConfig()
	if err != nil {
		return err
	}
	turns, err := f.loadWorkload(ctx)
	if err != nil {
		return err
	}
	cached := slices.ContainsFunc(turns, simulate.Turn.Prompted)
	names := *f.policies
	if cached && !flagSet(fs, "policy") {
		names = simulate.CacheBlindName + ",llmfleet"
	}
	var runs []simulate.Config
	for _, name := range strings.Split(names, ",") {
		cfg, err := simrun.PolicyConfig(base, strings.TrimSpace(name))
		if err != nil {
			return err
		}
		if !(cached && cfg.Name == simulate.AllSyncName) { // a comparison runs it first anyway
			runs = append(runs, cfg)
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	reports, err := simrun.Run(base, turns, runs, cached)
	if err != nil {
		return err
	}
	if *f.asJSON {
		enc := json.NewEncoder(stdout)
		for _, r := range reports {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
		return nil
	}
	if cached {
		return simrun.WriteCacheComparison(stdout, base, reports)
	}
	return simrun.WriteTable(stdout, reports)
}

// flagSet reports whether the flag name was set, on the command line or
// in the environment.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// baseConfig is the simulation the flags set, before its policy.
func (f *simFlags) baseConfig() (simulate.Config, error) {
	var cfg simulate.Config
	var err error
	if cfg.TurnaroundRange, err = emulator.ParseRanges("--turnaround", *f.turn); err != nil {
		return cfg, err
	}
	if cfg.SyncLatencyRange, err = emulator.ParseRanges("--sync-latency", *f.syncLat); err != nil {
		return cfg, err
	}
	if cfg.Straggler, err = simulate.ParseStraggler(*f.straggler); err != nil {
		return cfg, err
	}
	if cfg.FlexLatencyRange, err = emulator.ParseRanges("--flex-latency", *f.flexLat); err != nil {
		return cfg, err
	}
	if *f.flexRefusal < 0 || *f.flexRefusal > 1 {
		return cfg, fmt.Errorf("--flex-refusal %v is not a fraction from 0 to 1", *f.flexRefusal)
	}
	cache, err := f.cf.config()
	if err != nil {
		return cfg, err
	}
	cfg.Policy, cfg.Seed, cfg.Provider, cfg.FlexRefusal, cfg.Cache = f.pf.policy(), *f.seed, *f.provider, *f.flexRefusal, &cache
	return simrun.ForProvider(cfg, f.flexSet)
}

// loadWorkload reads or generates the workload the flags name.
func (f *simFlags) loadWorkload(ctx context.Context) ([]simulate.Turn, error) {
	sources := 0
	for _, set := range []bool{*f.workload != "", *f.fleet != "", *f.fromLedger} {
		if set {
			sources++
		}
	}
	switch {
	case sources != 1:
		return nil, fmt.Errorf("give one of --workload, --fleet and --from-ledger")
	case *f.fromLedger:
		return simrun.LedgerWorkload(ctx, *f.dbPath, *f.since)
	case *f.fleet != "":
		a, t, ok := strings.Cut(*f.fleet, "x")
		agents, err1 := strconv.Atoi(a)
		n, err2 := strconv.Atoi(t)
		if !ok || err1 != nil || err2 != nil || agents <= 0 || n <= 0 {
			return nil, fmt.Errorf("--fleet %q is not AGENTSxTURNS", *f.fleet)
		}
		return simulate.FleetOf(simrun.FleetModels(*f.provider), agents, n, *f.seed), nil
	}
	if turns, ok, err := simulate.Generate(*f.workload, *f.seed); ok {
		return turns, err
	}
	var r io.Reader = os.Stdin
	if *f.workload != "-" {
		file, err := os.Open(*f.workload)
		if err != nil {
			return nil, err
		}
		defer file.Close()
		r = file
	}
	return simulate.ReadWorkload(r)
}
