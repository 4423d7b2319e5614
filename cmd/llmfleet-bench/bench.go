package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/claude"
	"github.com/llmfleet/llmfleet/dispatch"
	"github.com/llmfleet/llmfleet/emulator"
	"github.com/llmfleet/llmfleet/proxy"
)

const benchUsage = `usage: llmfleet-bench [flags]

Measures the proxy on loopback against an in-process emulator, side by side
in one run:

  sync     latency (p50, p99) and throughput of POST /v1/messages at each
           --concurrency, for the emulator called directly, a bare
           httputil.ReverseProxy, and llmfleet serve's handler on the sync
           route (with a 1000 ms budget, and with none); targets alternate
           over --rounds rounds of --duration each
  stream   the delay to the first byte of a streamed sync response
  park     the proxy's memory per parked batched request with --park
           callers waiting (0 skips); the callers run in a child process

Prints a table and, last, one JSON line.

flags:
`

// benchBody is the create-message body every benchmark request sends.
const benchBody = `{"model":"claude-haiku-4-5","max_tokens":64,"messages":[{"role":"user","content":"Benchmark: what is the capital of France?"}]}`

// benchStreamBody is benchBody asking for a stream.
const benchStreamBody = `{"model":"claude-haiku-4-5","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"Benchmark: what is the capital of France?"}]}`

// benchTarget is one server the load goes to.
type benchTarget struct {
	name string
	url  string // base URL
	hdr  map[string]string
}

// latencyResult is what one target measured at one concurrency.
type latencyResult struct {
	Target      string  `json:"target"`
	Concurrency int     `json:"concurrency"`
	Requests    int     `json:"requests"`
	Errors      int     `json:"errors"`
	P50us       float64 `json:"p50_us"`
	P99us       float64 `json:"p99_us"`
	RPS         float64 `json:"req_per_s"`
	AddedP50us  float64 `json:"added_p50_us"`
	AddedP99us  float64 `json:"added_p99_us"`
	FirstError  string  `json:"first_error,omitempty"`
}

// benchReport is the JSON line llmfleet-bench prints.
type benchReport struct {
	GoVersion  string          `json:"go"`
	GOMAXPROCS int             `json:"gomaxprocs"`
	Duration   string          `json:"duration_per_round"`
	Rounds     int             `json:"rounds"`
	Sync       []latencyResult `json:"sync"`
	// Ratio is, per concurrency, llmfleet's added p50 (budget 1000 ms)
	// over the bare reverse proxy's added p50.
	Ratio  map[string]float64 `json:"added_p50_ratio_llmfleet_over_bare"`
	Stream []latencyResult    `json:"stream_first_byte"`
	Park   []parkResult       `json:"park,omitempty"`
}

// runBench runs the benchmarks the flags in args ask for and prints their
// table and JSON line to stdout.
func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("llmfleet-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		io.WriteString(stderr, benchUsage)
		fs.PrintDefaults()
	}
	duration := fs.Duration("duration", time.Second, "length of one round of one target at one concurrency")
	rounds := fs.Int("rounds", 6, "rounds; the targets take turns in each")
	concList := fs.String("concurrency", "1,64", "comma-separated numbers of concurrent callers for the sync benchmark")
	park := fs.Int("park", 10000, "parked batched requests for the memory benchmark (0 skips it)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	var levels []int
	for _, f := range strings.Split(*concList, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return fmt.Errorf("--concurrency: %q is not a list of positive integers", *concList)
		}
		levels = append(levels, n)
	}
	if *rounds < 1 || *duration <= 0 {
		return errors.New("--rounds and --duration must be positive")
	}

	env, err := startBenchEnv()
	if err != nil {
		return err
	}
	defer env.close()
	rep := &benchReport{
		GoVersion: runtime.Version(), GOMAXPROCS: runtime.GOMAXPROCS(0),
		Duration: duration.String(), Rounds: *rounds, Ratio: map[string]float64{},
	}
	fmt.Fprintf(stdout, "llmfleet-bench: %s, GOMAXPROCS %d, loopback, in-process emulator answering at once; %d rounds × %s per target\n",
		rep.GoVersion, rep.GOMAXPROCS, *rounds, *duration)
	fmt.Fprintln(stdout, "(the callers run in this process too, so absolute figures include their cost; compare the rows)")

	// Sync latency and throughput.
	fmt.Fprintf(stdout, "\nSync path: POST /v1/messages, JSON answer\n")
	fmt.Fprintf(stdout, "%-8s %-28s %9s %9s %9s %10s %10s %7s\n", "callers", "target", "p50", "p99", "req/s", "+p50", "+p99", "errors")
	for _, c := range levels {
		res, err := measureLatency(ctx, env.targets, c, *rounds, *duration, benchBody, false)
		if err != nil {
			return err
		}
		printRows(stdout, res)
		bare, ours := res[1].AddedP50us, res[2].AddedP50us
		ratio := ours / bare
		rep.Ratio[strconv.Itoa(c)] = round2(ratio)
		fmt.Fprintf(stdout, "%-8d llmfleet added p50 / bare reverse proxy added p50 = %.2f (target ≤ 1.10)\n", c, ratio)
		rep.Sync = append(rep.Sync, res...)
	}

	// Streamed first byte.
	fmt.Fprintf(stdout, "\nStreamed sync response (stream: true): delay to the first byte of the body, 1 caller\n")
	fmt.Fprintf(stdout, "%-8s %-28s %9s %9s %9s %10s %10s %7s\n", "callers", "target", "p50", "p99", "req/s", "+p50", "+p99", "errors")
	res, err := measureLatency(ctx, env.targets, 1, *rounds, *duration, benchStreamBody, true)
	if err != nil {
		return err
	}
	printRows(stdout, res)
	rep.Stream = res

	if *park > 0 {
		env.close() // the latency benchmark's servers and connections are not part of the memory figures
		fmt.Fprintf(stdout, "\nParked batched requests: %d callers (a child process) each waiting on one non-streaming POST /v1/messages\n", *park)
		pr, err := measurePark(ctx, *park, stdout)
		if err != nil {
			return err
		}
		rep.Park = pr
	}

	out, _ := json.Marshal(rep)
	fmt.Fprintf(stdout, "\n%s\n", out)
	return nil
}

// benchEnv is the emulator and the three servers in front of it.
type benchEnv struct {
	targets []benchTarget
	closers []func()
	once    sync.Once
}

// startBenchEnv starts the emulator, a bare reverse proxy and llmfleet's
// handler (with a dispatcher) on loopback.
func startBenchEnv() (*benchEnv, error) {
	env := &benchEnv{}
	emu := &emulator.Server{Turnaround: func(string, *rand.Rand) time.Duration { return time.Second }}
	emuURL, stop, err := serveLoopback(emu)
	if err != nil {
		return nil, err
	}
	env.closers = append(env.closers, stop)
	up, _ := url.Parse(emuURL)

	// The bare reverse proxy gets the same upstream pool as llmfleet's;
	// its failures are counted, not logged.
	bare := &httputil.ReverseProxy{
		Rewrite:       func(pr *httputil.ProxyRequest) { pr.SetURL(up) },
		Transport:     pooledTransport(),
		FlushInterval: -1,
		ErrorLog:      log.New(io.Discard, "", 0),
	}
	bareURL, stop, err := serveLoopback(bare)
	if err != nil {
		env.close()
		return nil, err
	}
	env.closers = append(env.closers, stop)

	d := &dispatch.Dispatcher{Providers: []llmfleet.Provider{&claude.Provider{BaseURL: emuURL}}}
	if err := d.Open(); err != nil {
		env.close()
		return nil, err
	}
	env.closers = append(env.closers, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		d.Close(ctx)
	})
	srv := &proxy.Server{Submitter: d, Upstream: up}
	oursURL, stop, err := serveLoopback(srv.Handler())
	if err != nil {
		env.close()
		return nil, err
	}
	env.closers = append(env.closers, stop)

	env.targets = []benchTarget{
		{name: "direct", url: emuURL},
		{name: "bare httputil.ReverseProxy", url: bareURL},
		{name: "llmfleet (budget 1000 ms)", url: oursURL, hdr: map[string]string{proxy.HeaderBudget: "1000"}},
		{name: "llmfleet (no budget)", url: oursURL},
	}
	return env, nil
}

func (e *benchEnv) close() {
	e.once.Do(func() {
		for i := len(e.closers) - 1; i >= 0; i-- {
			e.closers[i]()
		}
	})
}

// pooledTransport is an upstream transport that keeps enough idle
// connections for the benchmark's callers.
func pooledTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 1024
	t.MaxIdleConnsPerHost = 256
	return t
}

// serveLoopback serves h on a fresh loopback port and returns its base URL
// and a function that stops it.
func serveLoopback(h http.Handler) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: time.Minute}
	done := make(chan struct{})
	go func() {
		defer close(done)
		hs.Serve(ln)
	}()
	return "http://" + ln.Addr().String(), func() {
		hs.Close()
		<-done
	}, nil
}

// measureLatency runs conc callers against each target in turn, rounds
// times for d each, and returns one result per target, in order. With
// firstByte it times the first byte of each response's body, otherwise
// the whole exchange.
func measureLatency(ctx context.Context, targets []benchTarget, conc, rounds int, d time.Duration, body string, firstByte bool) ([]latencyResult, error) {
	samples := make([][]time.Duration, len(targets))
	errs := make([]int, len(targets))
	busy := make([]time.Duration, len(targets))
	firstErrs := make([]string, len(targets))
	for range rounds {
		for i, t := range targets {
			l, err := runLoad(ctx, t, conc, d, body, firstByte)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", t.name, err)
			}
			if l.firstErr != nil && firstErrs[i] == "" {
				firstErrs[i] = l.firstErr.Error()
			}
			samples[i] = append(samples[i], l.lat...)
			errs[i] += l.failed
			busy[i] += d
		}
	}
	out := make([]latencyResult, len(targets))
	for i, t := range targets {
		s := samples[i]
		slices.Sort(s)
		out[i] = latencyResult{
			Target: t.name, Concurrency: conc, Requests: len(s), Errors: errs[i], FirstError: firstErrs[i],
			P50us: micros(pct(s, 0.50)), P99us: micros(pct(s, 0.99)),
			RPS: round2(float64(len(s)+errs[i]) / busy[i].Seconds()),
		}
	}
	for i := range out {
		out[i].AddedP50us = round2(out[i].P50us - out[0].P50us)
		out[i].AddedP99us = round2(out[i].P99us - out[0].P99us)
	}
	return out, nil
}

// load is what one run of runLoad saw.
type load struct {
	lat      []time.Duration // of the successful calls
	failed   int
	firstErr error // of the failed calls
}

// runLoad runs conc callers against t for d, after a short warm-up.
func runLoad(ctx context.Context, t benchTarget, conc int, d time.Duration, body string, firstByte bool) (*load, error) {
	tr := &http.Transport{MaxIdleConnsPerHost: conc, DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	one := func() (time.Duration, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.url+"/v1/messages", strings.NewReader(body))
		if err != nil {
			return 0, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Api-Key", "sk-bench")
		req.Header.Set("Anthropic-Version", "2023-06-01")
		for k, v := range t.hdr {
			req.Header.Set(k, v)
		}
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		var lat time.Duration
		if firstByte {
			var b [1]byte
			if _, err := io.ReadFull(resp.Body, b[:]); err != nil {
				return 0, err
			}
			lat = time.Since(start)
		}
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			return 0, err
		}
		if !firstByte {
			lat = time.Since(start)
		}
		if resp.StatusCode != http.StatusOK {
			return 0, fmt.Errorf("status %d", resp.StatusCode)
		}
		return lat, nil
	}
	// Warm up: open the connections (ours and the proxies' upstream ones).
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() { one() })
	}
	wg.Wait()

	var mu sync.Mutex
	var all []time.Duration
	var firstErr error
	failed := 0
	deadline := time.Now().Add(d)
	for range conc {
		wg.Go(func() {
			lat := make([]time.Duration, 0, 1024)
			nerr := 0
			for time.Now().Before(deadline) && ctx.Err() == nil {
				l, err := one()
				if err != nil {
					if nerr == 0 && ctx.Err() == nil {
						mu.Lock()
						if firstErr == nil {
							firstErr = err
						}
						mu.Unlock()
					}
					nerr++
					continue
				}
				lat = append(lat, l)
			}
			mu.Lock()
			all = append(all, lat...)
			failed += nerr
			mu.Unlock()
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(all) == 0 {
		return nil, fmt.Errorf("every request failed: %v", firstErr)
	}
	return &load{lat: all, failed: failed, firstErr: firstErr}, nil
}

// printRows prints one table row per result, then the first error of
// each target that had some.
func printRows(w io.Writer, res []latencyResult) {
	for _, r := range res {
		base := r.Target == "direct"
		fmt.Fprintf(w, "%-8d %-28s %9s %9s %9.0f %10s %10s %7d\n", r.Concurrency, r.Target, us(r.P50us), us(r.P99us), r.RPS,
			signedUS(r.AddedP50us, base), signedUS(r.AddedP99us, base), r.Errors)
	}
	for _, r := range res {
		if r.FirstError != "" {
			fmt.Fprintf(w, "         %s: %d failed calls, the first: %s\n", r.Target, r.Errors, r.FirstError)
		}
	}
}

// pct returns the p-quantile of sorted s.
func pct(s []time.Duration, p float64) time.Duration {
	if len(s) == 0 {
		return 0
	}
	i := int(p*float64(len(s))+0.5) - 1
	return s[max(0, min(i, len(s)-1))]
}

func micros(d time.Duration) float64 { return round2(float64(d) / float64(time.Microsecond)) }

func round2(f float64) float64 { return float64(int64(f*100+0.5*sign(f))) / 100 }

func sign(f float64) float64 {
	if f < 0 {
		return -1
	}
	return 1
}

// us formats microseconds for the table.
func us(v float64) string {
	if v >= 1000 {
		return fmt.Sprintf("%.2fms", v/1000)
	}
	return fmt.Sprintf("%.0fµs", v)
}

// signedUS formats an added latency, blank for the baseline itself.
func signedUS(v float64, base bool) string {
	if base {
		return "-"
	}
	if v < 0 {
		return "-" + us(-v)
	}
	return "+" + us(v)
}
