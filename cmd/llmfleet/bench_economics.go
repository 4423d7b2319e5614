package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/llmfleet/llmfleet/dispatch"
	"github.com/llmfleet/llmfleet/emulator"
	"github.com/llmfleet/llmfleet/simulate"
)

// economicsCommand is the first argument that runs the economics
// benchmark instead of the proxy benchmark.
const economicsCommand = "economics"

const economicsUsage = `usage: llmfleet bench economics [flags]

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

func runEconomics(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("economics", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), economicsUsage)
		fs.PrintDefaults()
	}
	var f econFlags
	fs.IntVar(&f.agents, "agents", 100, "agents of the generated workload (simulate.Fleet)")
	fs.IntVar(&f.turns, "turns", 6, "dependent turns per agent of the generated workload")
	fs.Uint64Var(&f.seed, "seed", 1, "seed of the generated workload and of the simulated provider")
	fs.StringVar(&f.workload, "workload", "", "read the workload from this file (JSON lines, as llmfleet simulate) instead of generating it")
	fs.Float64Var(&f.scale, "scale", 60, "divide every time (workload, policy, provider) by this")
	fs.StringVar(&f.turnaround, "turnaround", "2m-10m", "batch turnaround before scaling, in the shape of llmfleet simulate --turnaround")
	fs.StringVar(&f.syncLatency, "sync-latency", "1s-3s", "latency of a sync call before scaling, same shape (start with a range for every model)")
	fs.StringVar(&f.straggler, "straggler", "", "FRACTION:FACTORx: that fraction of the batches take FACTOR times their turnaround (not scaled)")
	fs.StringVar(&f.binary, "llmfleet", "", "llmfleet binary to run (default: go build github.com/llmfleet/llmfleet/cmd/llmfleet into a temporary directory)")
	if err := parseFlags(fs, args, os.Getenv); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if f.scale <= 0 {
		return fmt.Errorf("-scale must be positive")
	}
	var turns []simulate.Turn
	if f.workload != "" {
		fh, err := os.Open(f.workload)
		if err != nil {
			return err
		}
		turns, err = simulate.ReadWorkload(fh)
		fh.Close()
		if err != nil {
			return err
		}
	} else {
		turns = simulate.Fleet(f.agents, f.turns, f.seed)
	}
	f.policy = dispatch.Policy{}.WithDefaults()
	scaled := scaleTurns(turns, f.scale)
	pol := scalePolicy(f.policy, f.scale)
	turnSpec, err := scaleRangeSpec(f.turnaround, f.scale)
	if err != nil {
		return err
	}
	turnRanges, err := emulator.ParseRanges("-turnaround", turnSpec)
	if err != nil {
		return err
	}
	syncSpec, err := scaleRangeSpec(f.syncLatency, f.scale)
	if err != nil {
		return err
	}
	syncRanges, err := emulator.ParseRanges("-sync-latency", syncSpec)
	if err != nil {
		return err
	}
	strag, err := simulate.ParseStraggler(f.straggler)
	if err != nil {
		return err
	}

	sim := map[string]simulate.Report{}
	for _, name := range []string{"llmfleet", "seed"} {
		cfg := simulate.Config{Name: name, Policy: pol, TurnaroundRange: turnRanges, SyncLatencyRange: syncRanges, Straggler: strag, Seed: f.seed}
		if name == "seed" {
			cfg.Policy = simulate.SeedPolicy(pol)
			// SeedPolicy sets unscaled durations: scale them too.
			cfg.Policy.SyncMaxLatency = scaleDuration(cfg.Policy.SyncMaxLatency, f.scale)
			cfg.Policy.BatchWindow = scaleDuration(cfg.Policy.BatchWindow, f.scale)
		}
		rep, err := simulate.Run(cfg, scaled)
		if err != nil {
			return fmt.Errorf("simulate %s: %w", name, err)
		}
		sim[name] = rep
	}
	fmt.Fprintf(stderr, "simulated; starting the real run (%d requests, scale 1/%g)\n", len(scaled), f.scale)
	real, err := realRun(ctx, f, scaled, pol, turnSpec, syncSpec, stderr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "workload: %d agents, %d requests, seed %d; scale 1/%g; turnaround %s (scaled %s); sync latency %s (scaled %s); stragglers %q\n\n",
		countAgents(turns), len(turns), f.seed, f.scale, f.turnaround, turnSpec, f.syncLatency, syncSpec, f.straggler)
	return writeComparison(stdout, fromReport(sim["llmfleet"]), real, fromReport(sim["seed"]))
}

// figures are one run's totals.
type figures struct {
	Requests, Sync, Batch, Misses, Rescued, Errors int
	CostUSD, SavedUSD                              float64
	WallMS                                         int64
}

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

func countAgents(turns []simulate.Turn) int {
	seen := map[string]bool{}
	for _, t := range turns {
		seen[t.Agent] = true
	}
	return len(seen)
}

// scaleDuration divides d by scale, to the millisecond at least 1ms when
// d is positive.
func scaleDuration(d time.Duration, scale float64) time.Duration {
	if d <= 0 {
		return d
	}
	s := time.Duration(float64(d) / scale)
	return max(s.Round(time.Millisecond), time.Millisecond)
}

// scaleMS divides a millisecond count by scale, keeping a positive one
// at least 1.
func scaleMS(v int64, scale float64) int64 {
	if v <= 0 {
		return v
	}
	return max(int64(math.Round(float64(v)/scale)), 1)
}

// scaleTurns returns turns with their times and budgets divided by scale.
func scaleTurns(turns []simulate.Turn, scale float64) []simulate.Turn {
	out := make([]simulate.Turn, len(turns))
	for i, t := range turns {
		t.AtMS, t.ThinkMS, t.BudgetMS = scaleMS(t.AtMS, scale), scaleMS(t.ThinkMS, scale), scaleMS(t.BudgetMS, scale)
		out[i] = t
	}
	return out
}

// scalePolicy returns p (with its defaults set) with its durations
// divided by scale.
func scalePolicy(p dispatch.Policy, scale float64) dispatch.Policy {
	p = p.WithDefaults()
	for _, d := range []*time.Duration{&p.DefaultBudget, &p.SyncMaxLatency, &p.BatchWindow, &p.PollInterval, &p.MaxPollInterval,
		&p.TurnaroundPrior, &p.CreateTimeout, &p.SyncLatencyPrior, &p.RescueMargin, &p.SettleDelay} {
		*d = scaleDuration(*d, scale)
	}
	if p.TurnaroundPriors != nil {
		m := make(map[string]time.Duration, len(p.TurnaroundPriors))
		for k, v := range p.TurnaroundPriors {
			m[k] = scaleDuration(v, scale)
		}
		p.TurnaroundPriors = m
	}
	return p
}

// scaleRangeSpec divides each duration of a per-model range flag
// ("2m-10m,claude-opus-4-6=5m-20m") by scale.
func scaleRangeSpec(spec string, scale float64) (string, error) {
	if _, err := emulator.ParseRanges("-turnaround", spec); err != nil {
		return "", err
	}
	var parts []string
	for _, part := range strings.Split(spec, ",") {
		model, rng, isPair := strings.Cut(part, "=")
		if !isPair {
			rng = part
		}
		var ds []string
		for _, s := range strings.Split(rng, "-") {
			d, err := time.ParseDuration(strings.TrimSpace(s))
			if err != nil {
				return "", err
			}
			ds = append(ds, scaleDuration(d, scale).String())
		}
		r := strings.Join(ds, "-")
		if isPair {
			r = strings.TrimSpace(model) + "=" + r
		}
		parts = append(parts, r)
	}
	return strings.Join(parts, ","), nil
}

// policyArgs are serve's flags for p.
func policyArgs(p dispatch.Policy) []string {
	return []string{
		"--sync-max-latency", p.SyncMaxLatency.String(), "--batch-window", p.BatchWindow.String(),
		"--batch-min-size", strconv.Itoa(p.BatchMinSize), "--batch-max-size", strconv.Itoa(p.BatchMaxSize),
		"--poll-interval", p.PollInterval.String(), "--max-poll-interval", p.MaxPollInterval.String(),
		"--turnaround-prior", p.TurnaroundPrior.String(), "--create-timeout", p.CreateTimeout.String(),
		"--sync-latency-prior", p.SyncLatencyPrior.String(), "--rescue-margin", p.RescueMargin.String(),
		"--settle-delay", p.SettleDelay.String(),
	}
}

// freeAddr returns a loopback address no one listens on just now.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// startProc starts bin with args, its output to a log file in dir.
func startProc(ctx context.Context, dir, name, bin string, args ...string) (*exec.Cmd, error) {
	log, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = childEnv()
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, err
	}
	return cmd, nil
}

// waitUp waits until url answers.
func waitUp(ctx context.Context, url string) error {
	for i := 0; i < 200; i++ {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s did not come up", url)
}

// realRun runs the scaled workload through serve against the emulator.
func realRun(ctx context.Context, f econFlags, turns []simulate.Turn, pol dispatch.Policy, turnSpec, syncSpec string, stderr io.Writer) (figures, error) {
	dir, err := os.MkdirTemp("", "llmfleet-economics-")
	if err != nil {
		return figures{}, err
	}
	defer os.RemoveAll(dir)
	bin := f.binary
	if bin == "" {
		bin = filepath.Join(dir, "llmfleet")
		build := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/llmfleet/llmfleet/cmd/llmfleet")
		build.Stderr = stderr
		if err := build.Run(); err != nil {
			return figures{}, fmt.Errorf("building llmfleet: %w", err)
		}
	}
	emuAddr, err := freeAddr()
	if err != nil {
		return figures{}, err
	}
	serveAddr, err := freeAddr()
	if err != nil {
		return figures{}, err
	}
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	emu, err := startProc(pctx, dir, "emulate", bin, "emulate", "--listen", emuAddr, "--turnaround", turnSpec,
		"--latency", syncSpec, "--straggler", f.straggler, "--seed", strconv.FormatUint(f.seed, 10))
	if err != nil {
		return figures{}, err
	}
	defer func() { cancel(); emu.Wait() }()
	if err := waitUp(ctx, "http://"+emuAddr+"/"); err != nil {
		return figures{}, err
	}
	serveArgs := append([]string{"serve", "--listen", serveAddr, "--anthropic-url", "http://" + emuAddr,
		"--db", filepath.Join(dir, "llmfleet.db"), "--secret-file", filepath.Join(dir, "llmfleet.secret"),
		"--shutdown-timeout", "1s"}, policyArgs(pol)...)
	srv, err := startProc(pctx, dir, "serve", bin, serveArgs...)
	if err != nil {
		return figures{}, err
	}
	defer func() { cancel(); srv.Wait() }()
	base := "http://" + serveAddr
	if err := waitUp(ctx, base+"/llmfleet/v1/stats"); err != nil {
		logs, _ := os.ReadFile(filepath.Join(dir, "serve.log"))
		return figures{}, fmt.Errorf("%w; serve log:\n%s", err, logs)
	}
	fig, err := drive(ctx, base, turns)
	if err != nil {
		return fig, err
	}
	stats, err := readStats(ctx, base)
	if err != nil {
		return fig, err
	}
	fig.CostUSD, fig.SavedUSD, fig.Rescued = stats.CostUSD, stats.SavedUSD, int(stats.Rescued)
	return fig, nil
}

type statsJSON struct {
	CostUSD  float64 `json:"cost_usd"`
	SavedUSD float64 `json:"saved_usd"`
	Rescued  int64   `json:"rescued"`
}

func readStats(ctx context.Context, base string) (statsJSON, error) {
	var s statsJSON
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/llmfleet/v1/stats", nil)
	if err != nil {
		return s, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return s, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return s, fmt.Errorf("stats: %s", resp.Status)
	}
	return s, json.NewDecoder(bufio.NewReader(resp.Body)).Decode(&s)
}

// messageBody returns a request body for turn t: its model, max_tokens
// its output tokens, and a prompt padded so the emulator counts about its
// input tokens (the emulator's answer echoes the prompt, so the output
// reaches max_tokens when the prompt is at least as long).
func messageBody(t simulate.Turn) []byte {
	mk := func(n int) []byte {
		b, _ := json.Marshal(map[string]any{"model": t.Model, "max_tokens": max(t.OutputTokens, 1),
			"messages": []map[string]string{{"role": "user", "content": t.Agent + " turn " + strconv.Itoa(t.Turn) + " " + strings.Repeat("x", n)}}})
		return b
	}
	base, err := emulator.InputTokens(mk(0))
	if err != nil {
		return mk(0)
	}
	return mk(int(max(t.InputTokens-base, 0)) * 4)
}

// drive runs the agents against the proxy at base and counts routes,
// misses and errors.
func drive(ctx context.Context, base string, turns []simulate.Turn) (figures, error) {
	agents := map[string][]simulate.Turn{}
	var order []string
	for _, t := range turns {
		if _, ok := agents[t.Agent]; !ok {
			order = append(order, t.Agent)
		}
		agents[t.Agent] = append(agents[t.Agent], t)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	var (
		mu  sync.Mutex
		fig figures
		wg  sync.WaitGroup
	)
	start := time.Now()
	var lastAnswer time.Time
	for _, name := range order {
		ts := agents[name]
		wg.Go(func() {
			next := start
			for i, t := range ts {
				if i == 0 {
					next = start.Add(time.Duration(t.AtMS) * time.Millisecond)
				} else {
					next = next.Add(time.Duration(t.ThinkMS) * time.Millisecond)
				}
				if d := time.Until(next); d > 0 {
					select {
					case <-ctx.Done():
						return
					case <-time.After(d):
					}
				}
				route, status, lat, err := send(ctx, client, base, t)
				now := time.Now()
				next = now
				mu.Lock()
				fig.Requests++
				switch route {
				case "sync":
					fig.Sync++
				case "batch":
					fig.Batch++
				}
				budget := time.Duration(t.BudgetMS) * time.Millisecond
				if status == http.StatusGatewayTimeout || (t.BudgetMS > 0 && lat > budget) {
					fig.Misses++
				}
				if err != nil || status != http.StatusOK {
					fig.Errors++
				}
				if now.After(lastAnswer) {
					lastAnswer = now
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	fig.WallMS = lastAnswer.Sub(start).Milliseconds()
	return fig, ctx.Err()
}

func send(ctx context.Context, client *http.Client, base string, t simulate.Turn) (route string, status int, lat time.Duration, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/messages", strings.NewReader(string(messageBody(t))))
	if err != nil {
		return "", 0, 0, err
	}
	req.Header.Set("content-type", "application/json")
	req.Header.Set("anthropic-version", "2023-06-01")
	req.Header.Set("x-api-key", t.Key)
	if t.BudgetMS > 0 {
		req.Header.Set("llmfleet-latency-budget-ms", strconv.FormatInt(t.BudgetMS, 10))
	}
	began := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return "", 0, time.Since(began), err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.Header.Get("llmfleet-route"), resp.StatusCode, time.Since(began), nil
}
