package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/llmfleet/llmfleet/dispatch"
	"github.com/llmfleet/llmfleet/emulator"
	"github.com/llmfleet/llmfleet/internal/envflag"
	"github.com/llmfleet/llmfleet/simulate"
)

const economicsUsage = `usage: llmfleet-bench economics [flags]

Runs one workload two ways with every time divided by -scale: through the
simulator (simulate.Run, in process, virtual clock) and for real, through
"llmfleet serve" against "llmfleet emulate" (both started as processes on
127.0.0.1, fresh temporary database), with the agents as goroutines of
this process. Prints the two side by side for the llmfleet policy, and the
seed policy simulated only (serve has no flags for it).

-turnaround, -sync-latency and -straggler go to both: the simulated
provider and "llmfleet emulate" (its --turnaround, --latency, --straggler).

flags:
`

// econFlags are the economics benchmark's settings, in unscaled time.
type econFlags struct {
	agents, turns int
	seed          uint64
	workload      string
	scale         float64
	turnaround    string
	syncLatency   string
	straggler     string
	binary        string
	policy        dispatch.Policy
}

// parseEconFlags parses the economics benchmark's flags.
func parseEconFlags(args []string, stderr io.Writer) (*econFlags, error) {
	fs := flag.NewFlagSet("economics", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), economicsUsage)
		fs.PrintDefaults()
	}
	f := &econFlags{}
	fs.IntVar(&f.agents, "agents", 100, "agents of the generated workload (simulate.Fleet)")
	fs.IntVar(&f.turns, "turns", 6, "dependent turns per agent of the generated workload")
	fs.Uint64Var(&f.seed, "seed", 1, "seed of the generated workload and of the simulated provider")
	fs.StringVar(&f.workload, "workload", "", "read the workload from this file (JSON lines, as llmfleet simulate) instead of generating it")
	fs.Float64Var(&f.scale, "scale", 60, "divide every time (workload, policy, provider) by this")
	fs.StringVar(&f.turnaround, "turnaround", "2m-10m", "batch turnaround before scaling, in the shape of llmfleet simulate --turnaround")
	fs.StringVar(&f.syncLatency, "sync-latency", "1s-3s", "latency of a sync call before scaling, same shape (start with a range for every model)")
	fs.StringVar(&f.straggler, "straggler", "", "FRACTION:FACTORx: that fraction of the batches take FACTOR times their turnaround (not scaled)")
	fs.StringVar(&f.binary, "llmfleet", "", `llmfleet binary to run (default: "llmfleet" beside this command, else on $PATH)`)
	if err := envflag.Parse(fs, args, os.Getenv); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if f.scale <= 0 {
		return nil, fmt.Errorf("-scale must be positive")
	}
	var err error
	if f.binary, err = llmfleetBinary(f.binary); err != nil {
		return nil, err
	}
	f.policy = dispatch.Policy{}.WithDefaults()
	return f, nil
}

// workload returns the turns of the -workload file, or generated.
func (f *econFlags) workloadTurns() ([]simulate.Turn, error) {
	if f.workload == "" {
		return simulate.Fleet(f.agents, f.turns, f.seed), nil
	}
	fh, err := os.Open(f.workload)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	return simulate.ReadWorkload(fh)
}

// econRun is one economics run, its times scaled: the workload, the
// policy and the provider's ranges (as flags of llmfleet emulate).
type econRun struct {
	turns              []simulate.Turn
	pol                dispatch.Policy
	turnSpec, syncSpec string
	sim                simulate.Config
}

// scaled returns the run of the workload turns that f asks for.
func (f *econFlags) scaled(turns []simulate.Turn) (*econRun, error) {
	r := &econRun{turns: scaleTurns(turns, f.scale), pol: scalePolicy(f.policy, f.scale)}
	var err error
	if r.turnSpec, err = scaleRangeSpec(f.turnaround, f.scale); err != nil {
		return nil, err
	}
	if r.syncSpec, err = scaleRangeSpec(f.syncLatency, f.scale); err != nil {
		return nil, err
	}
	r.sim = simulate.Config{Policy: r.pol, Seed: f.seed}
	if r.sim.TurnaroundRange, err = emulator.ParseRanges("-turnaround", r.turnSpec); err != nil {
		return nil, err
	}
	if r.sim.SyncLatencyRange, err = emulator.ParseRanges("-sync-latency", r.syncSpec); err != nil {
		return nil, err
	}
	if r.sim.Straggler, err = simulate.ParseStraggler(f.straggler); err != nil {
		return nil, err
	}
	return r, nil
}

// simulate runs the workload through the simulator under policy name
// ("llmfleet" or "seed").
func (r *econRun) simulate(name string, scale float64) (figures, error) {
	cfg := r.sim
	cfg.Name = name
	if name == "seed" {
		cfg.Policy = simulate.SeedPolicy(r.pol)
		// SeedPolicy sets unscaled durations: scale them too.
		cfg.Policy.SyncMaxLatency = scaleDuration(cfg.Policy.SyncMaxLatency, scale)
		cfg.Policy.BatchWindow = scaleDuration(cfg.Policy.BatchWindow, scale)
	}
	rep, err := simulate.Run(cfg, r.turns)
	if err != nil {
		return figures{}, fmt.Errorf("simulate %s: %w", name, err)
	}
	return fromReport(rep), nil
}

// runEconomics is llmfleet-bench economics.
func runEconomics(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f, err := parseEconFlags(args, stderr)
	if err != nil {
		return err
	}
	turns, err := f.workloadTurns()
	if err != nil {
		return err
	}
	r, err := f.scaled(turns)
	if err != nil {
		return err
	}
	sim, err := r.simulate("llmfleet", f.scale)
	if err != nil {
		return err
	}
	seed, err := r.simulate("seed", f.scale)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "simulated; starting the real run (%d requests, scale 1/%g)\n", len(r.turns), f.scale)
	real, err := realRun(ctx, f, r)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "workload: %d agents, %d requests, seed %d; scale 1/%g; turnaround %s (scaled %s); sync latency %s (scaled %s); stragglers %q\n\n",
		countAgents(turns), len(turns), f.seed, f.scale, f.turnaround, r.turnSpec, f.syncLatency, r.syncSpec, f.straggler)
	return writeComparison(stdout, sim, real, seed)
}

// figures are one run's totals.
type figures struct {
	Requests, Sync, Batch, Misses, Rescued, Errors int
	CostUSD, SavedUSD                              float64
	WallMS                                         int64
}

// fromReport is the figures of a simulation's report.
func fromReport(r simulate.Report) figures {
	return figures{Requests: r.Requests, Sync: r.Routes["sync"], Batch: r.Routes["batch"], Misses: r.BudgetMisses,
		Rescued: r.Rescued, Errors: r.Errors, CostUSD: r.CostUSD, SavedUSD: r.SavedUSD, WallMS: r.SimulatedMS}
}

// routeAgreement is 1 less the difference of the batched counts over the
// requests: 1 when both runs batched as many requests.
func routeAgreement(a, b figures) float64 {
	n := max(a.Requests, b.Requests)
	if n == 0 {
		return 1
	}
	return 1 - math.Abs(float64(a.Batch-b.Batch))/float64(n)
}

// writeComparison prints the simulated and the real run side by side,
// and how far their routes agree.
func writeComparison(w io.Writer, sim, real, seed figures) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\tllmfleet simulate\tllmfleet serve\tseed simulate\t")
	row := func(name string, f func(figures) string) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t\n", name, f(sim), f(real), f(seed))
	}
	row("requests", func(f figures) string { return strconv.Itoa(f.Requests) })
	row("sync", func(f figures) string { return strconv.Itoa(f.Sync) })
	row("batch", func(f figures) string { return strconv.Itoa(f.Batch) })
	row("budget misses", func(f figures) string { return strconv.Itoa(f.Misses) })
	row("rescued", func(f figures) string { return strconv.Itoa(f.Rescued) })
	row("errors", func(f figures) string { return strconv.Itoa(f.Errors) })
	row("cost", func(f figures) string { return fmt.Sprintf("$%.2f", f.CostUSD) })
	row("saved", func(f figures) string { return fmt.Sprintf("$%.2f", f.SavedUSD) })
	row("span (scaled)", func(f figures) string {
		return (time.Duration(f.WallMS) * time.Millisecond).Round(100 * time.Millisecond).String()
	})
	if err := tw.Flush(); err != nil {
		return err
	}
	d := math.Abs(float64(sim.Batch - real.Batch))
	_, err := fmt.Fprintf(w, "\nroute agreement, simulate vs serve: %.1f%% (|batch difference| %.0f of %d requests)\n",
		100*routeAgreement(sim, real), d, max(sim.Requests, real.Requests))
	return err
}

// countAgents counts the distinct agents of turns.
func countAgents(turns []simulate.Turn) int {
	seen := map[string]bool{}
	for _, t := range turns {
		seen[t.Agent] = true
	}
	return len(seen)
}
