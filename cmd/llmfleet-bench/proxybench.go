package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/llmfleet/llmfleet/internal/envflag"
)

const benchUsage = `usage: llmfleet-bench [flags]
       llmfleet-bench park [flags]        memory per parked batched caller
       llmfleet-bench economics [flags]   simulate vs serve on one workload

Measures the sync path of llmfleet serve as users run it, against a bare
httputil.ReverseProxy in front of the same upstream, in one run. Four
processes on loopback:

  upstream  the Anthropic API emulator answering at once, over HTTPS
            (HTTP/2 by ALPN; a self-signed CA made for the run, which
            the other processes trust through SSL_CERT_FILE)
  bare      a bare httputil.ReverseProxy with a buffer pool (this command)
  serve     llmfleet serve, its ledger (a temporary --db), metrics and
            access log on (the --llmfleet binary)
  load      the callers, a process of their own per round and target

Each round measures the upstream called directly, then bare, then serve
(interleaved), at each --concurrency; the figures are the median of the
rounds. The CPU per request is the CPU time (user and system) of the
target's process over the round, divided by the requests it served.
Prints a table against the goals and, last, one JSON line.

` + envflag.Usage + `
flags:
`

// benchBody is the create-message body every benchmark request sends.
const benchBody = `{"model":"claude-haiku-4-5","max_tokens":64,"messages":[{"role":"user","content":"Benchmark: what is the capital of France?"}]}`

// benchTarget is one server the load goes to.
type benchTarget struct {
	name string
	url  string // base URL
	hdr  map[string]string
	// more are further base URLs: the calls go to url and these in turn,
	// as a round-robin load balancer in front of replicas sends them.
	more []string
	pid  int // the process serving it, whose CPU time is measured
}

// loadResult is what one load process measured against one target.
type loadResult struct {
	Requests   int     `json:"requests"`
	Errors     int     `json:"errors"`
	P50us      float64 `json:"p50_us"`
	P99us      float64 `json:"p99_us"`
	RPS        float64 `json:"req_per_s"`
	FirstError string  `json:"first_error,omitempty"`
	// Warmup is the calls made before the measured ones (one per
	// caller), which the target served too.
	Warmup int `json:"warmup,omitempty"`
	// CPUus is the CPU time the target's process spent per request
	// served over the round, warm-up included; filled in by the parent.
	CPUus float64 `json:"cpu_us_per_request,omitempty"`
}

// benchRow is the median over the rounds of one target at one
// concurrency.
type benchRow struct {
	Target      string `json:"target"`
	Concurrency int    `json:"concurrency"`
	loadResult
	AddedP50us float64 `json:"added_p50_us"`
	AddedP99us float64 `json:"added_p99_us"`
}

// benchReport is the JSON line llmfleet-bench prints.
type benchReport struct {
	// Protocols counts the calls the upstream served by protocol
	// (HTTP/2.0 for every client that offered it by ALPN).
	Protocols map[string]int64 `json:"upstream_protocols"`
	Duration  string           `json:"duration_per_round"`
	Rounds    int              `json:"rounds"`
	Rows      []benchRow       `json:"sync"`
	// Goals: figures and whether each is met.
	Goals []benchGoal `json:"goals"`
}

// benchGoal is one goal against a figure.
type benchGoal struct {
	Goal   string  `json:"goal"`
	Figure float64 `json:"figure"`
	Met    bool    `json:"met"`
}

// benchFlags are the proxy benchmark's settings.
type benchFlags struct {
	duration time.Duration
	rounds   int
	levels   []int
	llmfleet string // the llmfleet binary
	portkey  string
	// variants are the extra flags of further serve targets, one each.
	variants []string
}

// parseBenchFlags parses the proxy benchmark's flags.
func parseBenchFlags(args []string, stderr io.Writer) (*benchFlags, error) {
	fs := flag.NewFlagSet("llmfleet-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		io.WriteString(stderr, benchUsage)
		fs.PrintDefaults()
	}
	f := &benchFlags{}
	fs.DurationVar(&f.duration, "duration", 2*time.Second, "length of one round of one target at one concurrency")
	fs.IntVar(&f.rounds, "rounds", 7, "rounds; the targets take turns in each, and the median is reported")
	concList := fs.String("concurrency", "1,64", "comma-separated numbers of concurrent callers")
	fs.StringVar(&f.llmfleet, "llmfleet", "", `llmfleet binary to run serve from (default: "llmfleet" beside this command, else on $PATH)`)
	fs.Func("variant", `flags of a further serve target, measured beside the others, e.g. -variant "--access-log=false"; a first word bin=PATH runs that llmfleet binary instead, e.g. an older build; "bare=PATH" is a further bare proxy, run by that llmfleet-bench binary, e.g. one built with -tags linkserve (repeatable; the goals are the plain serve's and bare proxy's)`, func(v string) error {
		if strings.TrimSpace(v) == "" {
			return errors.New("empty")
		}
		f.variants = append(f.variants, v)
		return nil
	})
	fs.StringVar(&f.portkey, "portkey", "", "the Portkey gateway's build/start-server.js (npm @portkey-ai/gateway), run with node as a fourth target; scripts/bench.sh installs it")
	if err := envflag.Parse(fs, args, os.Getenv); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	levels, err := parseLevels(*concList)
	if err != nil {
		return nil, err
	}
	f.levels = levels
	if f.rounds < 1 || f.duration <= 0 {
		return nil, errors.New("--rounds and --duration must be positive")
	}
	if f.llmfleet, err = llmfleetBinary(f.llmfleet); err != nil {
		return nil, err
	}
	return f, nil
}

// runBench starts the processes and measures.
func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f, err := parseBenchFlags(args, stderr)
	if err != nil {
		return err
	}
	rig, err := startRig(ctx, f)
	if err != nil {
		return err
	}
	defer rig.close()
	fmt.Fprintln(stdout, "llmfleet-bench: loopback; upstream: the emulator answering at once over HTTPS (HTTP/2, a self-signed CA);")
	fmt.Fprintln(stdout, "serve with its ledger (a temporary --db), metrics and access log on; load from a separate process;")
	fmt.Fprintf(stdout, "%d interleaved rounds × %s per target; median of the rounds\n\n", f.rounds, f.duration)

	// results[level][target] holds one loadResult per round.
	results := make([][][]loadResult, len(f.levels))
	for li := range f.levels {
		results[li] = make([][]loadResult, len(rig.targets))
	}
	for range f.rounds {
		for li, c := range f.levels {
			for ti, t := range rig.targets {
				r, err := measureRound(ctx, rig, t, c, f.duration)
				if err != nil {
					return fmt.Errorf("%s at %d callers: %w", t.name, c, err)
				}
				results[li][ti] = append(results[li][ti], r)
			}
		}
	}
	rep := &benchReport{Duration: f.duration.String(), Rounds: f.rounds}
	if rep.Protocols, err = rig.protocols(ctx); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "calls the upstream served, by protocol: %v\n\n", rep.Protocols)
	rep.Rows = tabulate(stdout, f.levels, rig.targets, results)
	rep.Goals = goals(rep.Rows)
	printGoals(stdout, rep.Goals, f.portkey != "")
	out, _ := json.Marshal(rep)
	fmt.Fprintf(stdout, "\n%s\n", out)
	return nil
}

// measureRound runs one round of load against t and measures the CPU
// time t's process spent meanwhile.
func measureRound(ctx context.Context, rig *benchRig, t benchTarget, conc int, d time.Duration) (loadResult, error) {
	cpu0, err := procCPU(t.pid)
	if err != nil {
		return loadResult{}, err
	}
	r, err := runLoadProcess(ctx, rig.self, rig.env, t, conc, d)
	if err != nil {
		return r, err
	}
	cpu1, err := procCPU(t.pid)
	if err != nil {
		return r, err
	}
	if n := r.Requests + r.Errors + r.Warmup; n > 0 {
		r.CPUus = round2(float64(cpu1-cpu0) / float64(time.Microsecond) / float64(n))
	}
	return r, nil
}

// tabulate prints the table of the medians and returns its rows; the
// first target is the baseline of the added latencies.
func tabulate(w io.Writer, levels []int, targets []benchTarget, results [][][]loadResult) []benchRow {
	var rows []benchRow
	fmt.Fprintf(w, "%-8s %-34s %9s %9s %9s %10s %10s %9s %7s\n", "callers", "target", "p50", "p99", "req/s", "+p50", "+p99", "CPU/req", "errors")
	for li, c := range levels {
		var direct benchRow
		for ti, t := range targets {
			row := benchRow{Target: t.name, Concurrency: c, loadResult: median(results[li][ti])}
			if ti == 0 {
				direct = row
			}
			row.AddedP50us = round2(row.P50us - direct.P50us)
			row.AddedP99us = round2(row.P99us - direct.P99us)
			rows = append(rows, row)
			fmt.Fprintf(w, "%-8d %-34s %9s %9s %9.0f %10s %10s %9s %7d\n", c, t.name, us(row.P50us), us(row.P99us), row.RPS,
				signedUS(row.AddedP50us, ti == 0), signedUS(row.AddedP99us, ti == 0), us(row.CPUus), row.Errors)
			if row.FirstError != "" {
				fmt.Fprintf(w, "         %s: first error: %s\n", t.name, row.FirstError)
			}
		}
	}
	return rows
}

// Target names; goals finds the rows by them.
const (
	directTarget  = "direct (upstream)"
	bareTarget    = "bare httputil.ReverseProxy"
	serveTarget   = "llmfleet serve"
	portkeyTarget = "Portkey gateway"
)

// goals compares serve with the bare proxy (and Portkey with serve)
// where the rows have the figures.
func goals(rows []benchRow) []benchGoal {
	row := func(target string, callers int) (benchRow, bool) {
		i := slices.IndexFunc(rows, func(r benchRow) bool { return r.Target == target && r.Concurrency == callers })
		if i < 0 {
			return benchRow{}, false
		}
		return rows[i], true
	}
	ratio := func(a, b float64) float64 { return round2(a / max(b, 0.01)) }
	var gs []benchGoal
	bare, ok1 := row(bareTarget, 1)
	ours, ok2 := row(serveTarget, 1)
	if ok1 && ok2 {
		r := ratio(ours.AddedP50us, bare.AddedP50us)
		gs = append(gs, benchGoal{"1 caller: serve's added p50 ≤ 1.1× bare's (×)", r, r <= 1.1})
	}
	bare, ok1 = row(bareTarget, 64)
	ours, ok2 = row(serveTarget, 64)
	if ok1 && ok2 {
		r := ratio(ours.CPUus, bare.CPUus)
		gs = append(gs, benchGoal{"64 callers: serve's CPU per request ≤ 1.1× bare's (×)", r, r <= 1.1})
		r = ratio(ours.RPS, bare.RPS)
		gs = append(gs, benchGoal{"64 callers: serve's throughput ≥ 0.95× bare's (×)", r, r >= 0.95})
	}
	for _, g := range []struct {
		callers int
		times   float64
	}{{1, 4}, {64, 10}} {
		pk, ok1 := row(portkeyTarget, g.callers)
		ours, ok2 := row(serveTarget, g.callers)
		if ok1 && ok2 {
			r := ratio(pk.AddedP50us, ours.AddedP50us)
			gs = append(gs, benchGoal{fmt.Sprintf("%s: Portkey's added p50 ≥ %g× serve's (×)", callersName(g.callers), g.times), r, r >= g.times})
		}
	}
	return gs
}

// printGoals prints the goals against their figures.
func printGoals(w io.Writer, gs []benchGoal, portkey bool) {
	fmt.Fprintln(w, "\nGoals:")
	for _, g := range gs {
		mark := "not met"
		if g.Met {
			mark = "met"
		}
		fmt.Fprintf(w, "  %-58s %10.2f  %s\n", g.Goal, g.Figure, mark)
	}
	if !portkey {
		fmt.Fprintln(w, "  (the Portkey goals, ≥ 4× serve's added latency at 1 caller and ≥ 10× at 64, need -portkey: see scripts/bench.sh)")
	}
}

// parseLevels parses a comma-separated list of positive integers.
func parseLevels(list string) ([]int, error) {
	var levels []int
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("--concurrency: %q is not a list of positive integers", list)
		}
		levels = append(levels, n)
	}
	return levels, nil
}

// median returns, figure by figure, the median of rs; counts are summed.
func median(rs []loadResult) loadResult {
	pick := func(f func(loadResult) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	out := loadResult{
		P50us: pick(func(r loadResult) float64 { return r.P50us }),
		P99us: pick(func(r loadResult) float64 { return r.P99us }),
		RPS:   pick(func(r loadResult) float64 { return r.RPS }),
		CPUus: pick(func(r loadResult) float64 { return r.CPUus }),
	}
	for _, r := range rs {
		out.Requests += r.Requests
		out.Errors += r.Errors
		out.Warmup += r.Warmup
		if out.FirstError == "" {
			out.FirstError = r.FirstError
		}
	}
	return out
}

// runLoadProcess runs one round of load against t in a child process
// (this command, as "llmfleet-bench load") with the environment env.
func runLoadProcess(ctx context.Context, self string, env []string, t benchTarget, conc int, d time.Duration) (loadResult, error) {
	args := []string{loadCommand, "--url", t.url, "--concurrency", strconv.Itoa(conc), "--duration", d.String()}
	for k, v := range t.hdr {
		args = append(args, "--header", k+": "+v)
	}
	cmd := exec.CommandContext(ctx, self, args...)
	cmd.Env = env
	var errOut strings.Builder
	cmd.Stderr = &errOut
	out, err := cmd.Output()
	if err != nil {
		return loadResult{}, fmt.Errorf("load process: %v: %s", err, errOut.String())
	}
	var r loadResult
	if err := json.Unmarshal(out, &r); err != nil {
		return loadResult{}, fmt.Errorf("load process said %q: %v", out, err)
	}
	return r, nil
}

// callersName is "1 caller" or "N callers".
func callersName(n int) string {
	if n == 1 {
		return "1 caller"
	}
	return strconv.Itoa(n) + " callers"
}
