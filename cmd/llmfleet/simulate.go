package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	iofs "io/fs"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/llmfleet/llmfleet/emulator"
	"github.com/llmfleet/llmfleet/ledger"
	"github.com/llmfleet/llmfleet/simulate"
	"github.com/llmfleet/llmfleet/sqlite"
)

func init() { commands["simulate"] = runSimulate }

const simulateUsage = `usage: llmfleet simulate (--workload FILE | --fleet AGENTSxTURNS | --from-ledger [--db PATH] [--since D]) [flags]

Runs the dispatcher (the engine of llmfleet serve: policy, pools, polling,
rescue) on a virtual clock against a simulated provider, and prints what
the workload would have cost and which budgets would have broken, per
policy: a table, or with --json one JSON object a line, one per policy.

A workload is JSON lines, one request (an agent's turn) a line:
  {"agent": "a1", "turn": 0, "at_ms": 0, "think_ms": 0, "model": "claude-sonnet-4-6",
   "budget_ms": 600000, "input_tokens": 1200, "output_tokens": 300, "key": "k1"}
An agent's first turn arrives at_ms after the start; each later turn
think_ms after the agent's previous turn was answered.

--from-ledger replays the traffic a deployment recorded in its ledger
(the database of "llmfleet serve", which must not be running): each entry
becomes a one-turn request arriving when the recorded one arrived, with
its model, budget and usage (sync entries carry no budget: they replay
sync).

"bound" is what the best router with a sync fallback could expect to
save, knowing the --turnaround, --straggler and --sync-latency
distributions but not the draws (see simulate.Bound); "% of bound" is
"saved" over it.

` + envUsage + `
flags:
`

// runSimulate runs a simulation and prints its report.
func runSimulate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("simulate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), simulateUsage)
		fs.PrintDefaults()
	}
	workload := fs.String("workload", "", "workload file, JSON lines ('-': standard input)")
	fleet := fs.String("fleet", "", "generate the workload instead: AGENTSxTURNS dependent turns (e.g. 100x6), 3 models of --provider, budgets from 5s to 24h")
	provider := fs.String("provider", "anthropic", "the simulated provider, whose prices apply: anthropic, or openai (whose flex tier the engine may route to)")
	flexLat := fs.String("flex-latency", "3s-30s", "latency of a flex call (--provider openai), in the shape of --turnaround")
	flexRefusal := fs.Float64("flex-refusal", 0, "fraction of flex calls refused for lack of capacity (429, unbilled), from 0 to 1")
	turn := fs.String("turnaround", "2m-10m", `batch turnaround: a duration ("5m") or a uniform range ("2m-10m"), for every model, then model=range pairs for some ("2m-10m,claude-opus-4-6=5m-20m")`)
	syncLat := fs.String("sync-latency", "1s-3s", "latency of a sync call, in the shape of --turnaround")
	straggler := fs.String("straggler", "", "FRACTION:FACTORx: that fraction of the batches take FACTOR times their turnaround (e.g. 0.05:10x)")
	seed := fs.Uint64("seed", 1, "seed of the simulated provider's draws (and of --fleet)")
	fromLedger := fs.Bool("from-ledger", false, "replay the ledger of --db instead of a workload")
	dbPath := fs.String("db", "", "with --from-ledger: SQLite database of llmfleet serve (default: llmfleet/llmfleet.db in $XDG_DATA_HOME or ~/.local/share)")
	since := fs.String("since", "0", `with --from-ledger: replay the last DURATION ("24h", "7d"; "0": all of it)`)
	policies := fs.String("policy", "llmfleet", "policies to simulate, comma-separated: llmfleet (the policy the flags set: flex preferred to batch where both keep the budget), prefer-batch (the same, batch preferred to flex), seed (sync iff budget <= 5s, else batch, one pool per key flushed every 30s, no learning, no rescue)")
	asJSON := fs.Bool("json", false, "print one JSON object per policy instead of a table")
	pf := addPolicyFlags(fs)
	if err := parseFlags(fs, args, os.Getenv); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	turnaround, err := emulator.ParseRanges("--turnaround", *turn)
	if err != nil {
		return err
	}
	syncLatency, err := emulator.ParseRanges("--sync-latency", *syncLat)
	if err != nil {
		return err
	}
	strag, err := simulate.ParseStraggler(*straggler)
	if err != nil {
		return err
	}
	flexLatency, err := emulator.ParseRanges("--flex-latency", *flexLat)
	if err != nil {
		return err
	}
	if *flexRefusal < 0 || *flexRefusal > 1 {
		return fmt.Errorf("--flex-refusal %v is not a fraction from 0 to 1", *flexRefusal)
	}
	models := simulate.FleetModels
	switch *provider {
	case "anthropic":
	case "openai":
		models = simulate.OpenAIFleetModels
	default:
		return fmt.Errorf("--provider: unknown provider %q (anthropic, openai)", *provider)
	}
	var turns []simulate.Turn
	sources := 0
	for _, set := range []bool{*workload != "", *fleet != "", *fromLedger} {
		if set {
			sources++
		}
	}
	switch {
	case sources != 1:
		return fmt.Errorf("give one of --workload, --fleet and --from-ledger")
	case *fromLedger:
		if turns, err = ledgerWorkload(ctx, *dbPath, *since); err != nil {
			return err
		}
	case *fleet != "":
		a, t, ok := strings.Cut(*fleet, "x")
		agents, err1 := strconv.Atoi(a)
		n, err2 := strconv.Atoi(t)
		if !ok || err1 != nil || err2 != nil || agents <= 0 || n <= 0 {
			return fmt.Errorf("--fleet %q is not AGENTSxTURNS", *fleet)
		}
		turns = simulate.FleetOf(models, agents, n, *seed)
	default:
		var r io.Reader = os.Stdin
		if *workload != "-" {
			f, err := os.Open(*workload)
			if err != nil {
				return err
			}
			defer f.Close()
			r = f
		}
		if turns, err = simulate.ReadWorkload(r); err != nil {
			return err
		}
	}
	var reports []simulate.Report
	for _, name := range strings.Split(*policies, ",") {
		cfg := simulate.Config{Name: strings.TrimSpace(name), Policy: pf.policy(), TurnaroundRange: turnaround,
			SyncLatencyRange: syncLatency, Straggler: strag, Seed: *seed, Provider: *provider,
			FlexLatencyRange: flexLatency, FlexRefusal: *flexRefusal}
		switch cfg.Name {
		case "llmfleet":
		case "prefer-batch":
			cfg.Policy.PreferBatch = true
		case "seed":
			cfg.Policy = simulate.SeedPolicy(cfg.Policy)
		default:
			return fmt.Errorf("--policy: unknown policy %q (llmfleet, prefer-batch, seed)", cfg.Name)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rep, err := simulate.Run(cfg, turns)
		if err != nil {
			return fmt.Errorf("policy %s: %w", cfg.Name, err)
		}
		reports = append(reports, rep)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		for _, r := range reports {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
		return nil
	}
	return writeSimulation(stdout, reports)
}

// ledgerWorkload reads the ledger entries of the last since from the
// database at path and turns them into a workload.
func ledgerWorkload(ctx context.Context, path, since string) ([]simulate.Turn, error) {
	if path == "" {
		p, err := sqlite.DefaultPath()
		if err != nil {
			return nil, err
		}
		path = p
	}
	// Opening creates a missing database: refuse instead.
	if _, err := os.Stat(path); err != nil {
		if errors.Is(err, iofs.ErrNotExist) {
			return nil, fmt.Errorf("no llmfleet database at %s (see --db)", path)
		}
		return nil, err
	}
	p, err := ledger.ParsePeriod(since, "", "", time.Now())
	if err != nil {
		return nil, fmt.Errorf("--since: %w", err)
	}
	if p.From.IsZero() {
		p.From = time.Unix(0, 0)
	}
	db := &sqlite.DB{Path: path, Logger: slog.New(slog.DiscardHandler)}
	if err := db.Open(ctx); err != nil {
		return nil, err
	}
	defer db.Close()
	entries, err := db.Ledger(ctx, p.From, p.To)
	if err != nil {
		return nil, err
	}
	if len(entries) == 0 {
		return nil, fmt.Errorf("the ledger at %s has no entries in that period", path)
	}
	return simulate.FromLedger(entries), nil
}

// writeSimulation prints the reports as tables.
func writeSimulation(w io.Writer, reports []simulate.Report) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "policy\trequests\tsync\tflex\tbatch\tbatches\tmgmt calls\tcost\tsync equivalent\tsaved\tbound\t% of bound\trescued\tflex fallbacks\tbudget misses\t")
	for _, r := range reports {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t$%.2f\t$%.2f\t$%.2f\t$%.2f\t%.1f%%\t%d\t%d\t%d\t\n", r.Policy, r.Requests, r.Routes["sync"], r.Routes["flex"], r.Routes["batch"],
			r.Batches, r.ManagementCalls, r.CostUSD, r.SyncEquivalentUSD, r.SavedUSD, r.BoundSavedUSD, 100*r.SavedOfBound, r.Rescued, r.FlexFallbacks, r.BudgetMisses)
	}
	fmt.Fprintln(tw, "\t")
	fmt.Fprintln(tw, "latency p50 / p99 by budget\t≤5s\t≤1m\t≤10m\t>10m\t")
	for _, r := range reports {
		fmt.Fprintf(tw, "%s", r.Policy)
		for _, c := range []string{"le_5s", "le_1m", "le_10m", "gt_10m"} {
			p, ok := r.Latency[c]
			if !ok {
				fmt.Fprint(tw, "\t-")
				continue
			}
			fmt.Fprintf(tw, "\t%s / %s", ms(p.P50), ms(p.P99))
		}
		fmt.Fprintln(tw, "\t")
	}
	return tw.Flush()
}

func ms(v int64) string {
	d := time.Duration(v) * time.Millisecond
	if d >= time.Minute {
		return d.Round(time.Second).String()
	}
	return d.Round(100 * time.Millisecond).String()
}
