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
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

func init() { commands["bench"] = runBenchCommand }

const benchUsage = `usage: llmfleet bench [flags]
       llmfleet bench park [flags]        memory per parked batched caller
       llmfleet bench economics [flags]   simulate vs serve on one workload

Measures the sync path of llmfleet serve as users run it: four processes
on loopback, each started from this binary:

  upstream  llmfleet emulate --latency 0 (answers at once)
  bare      a bare httputil.ReverseProxy with a buffer pool
  serve     llmfleet serve, the ledger on (a temporary --db), metrics on
  load      the callers, a process of their own per round and target

Each round measures the upstream called directly, then bare, then serve
(interleaved), at each --concurrency; the figures are the median of the
rounds. Prints a table against the goals and, last, one JSON line.

flags:
`

// Hidden subcommands: the child processes of the benchmark.
const (
	benchLoadCommand      = "load"
	benchBareProxyCommand = "bare-proxy"
)

// runBenchCommand runs llmfleet bench and its subcommands.
func runBenchCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case economicsCommand:
			return runEconomics(ctx, args[1:], stdout, stderr)
		case "park":
			return runParkBench(ctx, args[1:], stdout, stderr)
		case parkClientCommand:
			return runParkClient(ctx, args[1:], stdout, stderr)
		case benchLoadCommand:
			return runLoadClient(ctx, args[1:], stdout, stderr)
		case benchBareProxyCommand:
			return runBareProxy(ctx, args[1:], stdout, stderr)
		}
	}
	return runBench(ctx, args, stdout, stderr)
}

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
}

// loadResult is what one load process measured against one target.
type loadResult struct {
	Requests   int     `json:"requests"`
	Errors     int     `json:"errors"`
	P50us      float64 `json:"p50_us"`
	P99us      float64 `json:"p99_us"`
	RPS        float64 `json:"req_per_s"`
	FirstError string  `json:"first_error,omitempty"`
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

// benchReport is the JSON line llmfleet bench prints.
type benchReport struct {
	Duration string     `json:"duration_per_round"`
	Rounds   int        `json:"rounds"`
	Rows     []benchRow `json:"sync"`
	// Goals: figures and whether each is met.
	Goals []benchGoal `json:"goals"`
}

// benchGoal is one goal of the issue against a figure.
type benchGoal struct {
	Goal   string  `json:"goal"`
	Figure float64 `json:"figure"`
	Met    bool    `json:"met"`
}

// runBench starts the processes and measures.
func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("llmfleet bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		io.WriteString(stderr, benchUsage)
		fs.PrintDefaults()
	}
	duration := fs.Duration("duration", 2*time.Second, "length of one round of one target at one concurrency")
	rounds := fs.Int("rounds", 7, "rounds; the targets take turns in each, and the median is reported")
	concList := fs.String("concurrency", "1,64", "comma-separated numbers of concurrent callers")
	bin := fs.String("llmfleet", "", "llmfleet binary to run the processes from (default: this one)")
	portkey := fs.String("portkey", "", "the Portkey gateway's build/start-server.js (npm @portkey-ai/gateway), run with node as a fourth target; scripts/bench.sh installs it")
	if err := parseFlags(fs, args, os.Getenv); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	levels, err := parseLevels(*concList)
	if err != nil {
		return err
	}
	if *rounds < 1 || *duration <= 0 {
		return errors.New("--rounds and --duration must be positive")
	}
	exe := *bin
	if exe == "" {
		if exe, err = os.Executable(); err != nil {
			return err
		}
	}
	dir, err := os.MkdirTemp("", "llmfleet-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var procs []*exec.Cmd
	defer func() {
		cancel()
		for _, p := range procs {
			p.Wait()
		}
	}()
	start := func(name string, args ...string) (string, error) {
		addr, err := freeAddr()
		if err != nil {
			return "", err
		}
		p, err := startProc(pctx, dir, name, exe, append(args, "--listen", addr)...)
		if err != nil {
			return "", err
		}
		procs = append(procs, p)
		base := "http://" + addr
		if err := waitUp(ctx, base+"/healthz"); err != nil {
			log, _ := os.ReadFile(filepath.Join(dir, name+".log"))
			return "", fmt.Errorf("%s: %w\n%s", name, err, log)
		}
		return base, nil
	}
	upURL, err := start("emulate", "emulate", "--latency", "0", "--turnaround", "1s")
	if err != nil {
		return err
	}
	bareURL, err := start("bare", "bench", benchBareProxyCommand, "--upstream", upURL)
	if err != nil {
		return err
	}
	serveURL, err := start("serve", "serve", "--anthropic-url", upURL, "--db", filepath.Join(dir, "bench.db"),
		"--secret-file", filepath.Join(dir, "secret"))
	if err != nil {
		return err
	}
	targets := []benchTarget{
		{name: "direct (upstream)", url: upURL},
		{name: "bare httputil.ReverseProxy", url: bareURL},
		{name: "llmfleet serve", url: serveURL},
	}
	if *portkey != "" {
		addr, err := freeAddr()
		if err != nil {
			return err
		}
		_, port, _ := strings.Cut(addr, ":")
		p, err := startProc(pctx, dir, "portkey", "node", *portkey, "--port="+port, "--headless")
		if err != nil {
			return err
		}
		procs = append(procs, p)
		pkURL := "http://" + addr
		if err := waitUp(ctx, pkURL+"/"); err != nil {
			log, _ := os.ReadFile(filepath.Join(dir, "portkey.log"))
			return fmt.Errorf("portkey: %w\n%s", err, log)
		}
		// Portkey as an Anthropic gateway in front of the same upstream.
		targets = append(targets, benchTarget{name: "Portkey gateway", url: pkURL,
			hdr: map[string]string{"x-portkey-provider": "anthropic", "x-portkey-custom-host": upURL + "/v1"}})
	}
	fmt.Fprintf(stdout, "llmfleet bench: loopback, upstream llmfleet emulate --latency 0; serve with ledger (%s) and metrics on;\n", "temporary --db")
	fmt.Fprintf(stdout, "load from a separate process; %d interleaved rounds × %s per target; median of the rounds\n\n", *rounds, *duration)

	// results[level][target] holds one loadResult per round.
	results := make([][][]loadResult, len(levels))
	for li := range levels {
		results[li] = make([][]loadResult, len(targets))
	}
	for range *rounds {
		for li, c := range levels {
			for ti, t := range targets {
				r, err := runLoadProcess(ctx, exe, t, c, *duration)
				if err != nil {
					return fmt.Errorf("%s at %d callers: %w", t.name, c, err)
				}
				results[li][ti] = append(results[li][ti], r)
			}
		}
	}
	rep := &benchReport{Duration: duration.String(), Rounds: *rounds}
	fmt.Fprintf(stdout, "%-8s %-28s %9s %9s %9s %10s %10s %7s\n", "callers", "target", "p50", "p99", "req/s", "+p50", "+p99", "errors")
	byKey := map[string]benchRow{}
	for li, c := range levels {
		var direct benchRow
		for ti, t := range targets {
			row := benchRow{Target: t.name, Concurrency: c, loadResult: median(results[li][ti])}
			if ti == 0 {
				direct = row
			}
			row.AddedP50us = round2(row.P50us - direct.P50us)
			row.AddedP99us = round2(row.P99us - direct.P99us)
			rep.Rows = append(rep.Rows, row)
			byKey[fmt.Sprint(ti, "/", c)] = row
			fmt.Fprintf(stdout, "%-8d %-28s %9s %9s %9.0f %10s %10s %7d\n", c, t.name, us(row.P50us), us(row.P99us), row.RPS,
				signedUS(row.AddedP50us, ti == 0), signedUS(row.AddedP99us, ti == 0), row.Errors)
			if row.FirstError != "" {
				fmt.Fprintf(stdout, "         %s: first error: %s\n", t.name, row.FirstError)
			}
		}
	}
	if bare, ok := byKey["1/1"]; ok {
		ours := byKey["2/1"]
		ratio := round2(ours.AddedP50us / max(bare.AddedP50us, 0.01))
		rep.Goals = append(rep.Goals,
			benchGoal{"1 caller: serve's added p50 ≤ 1.0× bare's", ratio, ratio <= 1.0},
			benchGoal{"1 caller: serve's added p99 ≤ 1 ms (µs)", ours.AddedP99us, ours.AddedP99us <= 1000})
	}
	if bare, ok := byKey["1/64"]; ok {
		ours := byKey["2/64"]
		share := round2(100 * ours.RPS / max(bare.RPS, 0.01))
		rep.Goals = append(rep.Goals, benchGoal{"64 callers: serve's throughput ≥ 95% of bare's (%)", share, share >= 95})
	}
	for _, g := range []struct {
		callers int
		times   float64
	}{{1, 4}, {64, 10}} {
		pk, ok := byKey[fmt.Sprint(3, "/", g.callers)]
		if !ok {
			continue
		}
		ours := byKey[fmt.Sprint(2, "/", g.callers)]
		ratio := round2(pk.AddedP50us / max(ours.AddedP50us, 0.01))
		rep.Goals = append(rep.Goals, benchGoal{fmt.Sprintf("%d callers: Portkey's added p50 ≥ %g× serve's", g.callers, g.times), ratio, ratio >= g.times})
	}
	fmt.Fprintln(stdout, "\nGoals:")
	for _, g := range rep.Goals {
		mark := "not met"
		if g.Met {
			mark = "met"
		}
		fmt.Fprintf(stdout, "  %-55s %10.2f  %s\n", g.Goal, g.Figure, mark)
	}
	if *portkey == "" {
		fmt.Fprintln(stdout, "  (the Portkey goals, ≥ 4× lower added latency at 1 caller and ≥ 10× at 64, need -portkey: see scripts/bench.sh)")
	}
	out, _ := json.Marshal(rep)
	fmt.Fprintf(stdout, "\n%s\n", out)
	return nil
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
	}
	for _, r := range rs {
		out.Requests += r.Requests
		out.Errors += r.Errors
		if out.FirstError == "" {
			out.FirstError = r.FirstError
		}
	}
	return out
}

// runLoadProcess runs one round of load against t in a child process.
func runLoadProcess(ctx context.Context, exe string, t benchTarget, conc int, d time.Duration) (loadResult, error) {
	args := []string{"bench", benchLoadCommand, "--url", t.url, "--concurrency", strconv.Itoa(conc), "--duration", d.String()}
	for k, v := range t.hdr {
		args = append(args, "--header", k+": "+v)
	}
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Env = childEnv()
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
