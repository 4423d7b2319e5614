package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/claude"
	"github.com/llmfleet/llmfleet/dispatch"
	"github.com/llmfleet/llmfleet/emulator"
	"github.com/llmfleet/llmfleet/internal/envflag"
	"github.com/llmfleet/llmfleet/proxy"
)

// parkBody is the body of parked request i: benchBody's shape with a
// fixed-width number, so that every body is distinct and of one length.
func parkBody(i int) string {
	return fmt.Sprintf(`{"model":"claude-haiku-4-5","max_tokens":64,"messages":[{"role":"user","content":"Parked request %06d: what is the capital of France?"}]}`, i)
}

// parkResult is the memory one server configuration holds per parked
// request, measured in the server's process.
type parkResult struct {
	Config    string `json:"config"`
	Parked    int    `json:"parked"`
	BodyBytes int    `json:"body_bytes"`
	// HeapInuse is the growth of runtime.MemStats.HeapInuse (after GC)
	// per parked request; HeapAlloc likewise for live heap objects.
	HeapInuse float64 `json:"heap_inuse_per_request_bytes"`
	HeapAlloc float64 `json:"heap_alloc_per_request_bytes"`
	// BeyondBody is HeapInuse less the body.
	BeyondBody float64 `json:"heap_beyond_body_bytes"`
	// OverFloor is HeapInuse less the net/http floor's HeapInuse: what
	// llmfleet adds to what any Go HTTP server holding the request holds.
	OverFloor  float64 `json:"heap_over_net_http_floor_bytes"`
	Stack      float64 `json:"stack_per_request_bytes"`
	Goroutines float64 `json:"goroutines_per_request"`
}

// parkConfig is one server configuration of the memory benchmark.
type parkConfig struct {
	name    string
	handler http.Handler
	parked  func() int64 // requests parked now
	// release answers the requests still parked once their callers have
	// gone: a caller parked on its connection alone (the proxy took the
	// connection over) is not watched, so its request outlives it.
	release func()
	close   func()
}

// measurePark parks n requests on each configuration in turn and reports
// the server-side memory they hold.
func measurePark(ctx context.Context, n int, stdout io.Writer) ([]parkResult, error) {
	fmt.Fprintln(stdout, `Method: the callers run in a child process ("llmfleet-bench park-client"), each on its own connection,
so this process holds only the server side. After runtime.GC, runtime.MemStats is read before the
callers connect and once all n are parked; the growth divided by n is the figure per request
("beyond body" subtracts the body, which the proxy must keep). The net/http floor is a handler that
reads the body and waits: the memory any Go HTTP server holds for an open request (connection
buffers, the conn's goroutines). "over floor" is what llmfleet adds to it.`)
	fmt.Fprintf(stdout, "%-44s %10s %12s %11s %11s %11s\n", "server", "heap/req", "beyond body", "over floor", "stack/req", "goroutines")

	var floor float64
	var out []parkResult
	for i, mk := range []func() (*parkConfig, error){parkFloor, parkProxyOnly, parkProxyDispatcher} {
		cfg, err := mk()
		if err != nil {
			return nil, err
		}
		r, err := parkOnce(ctx, cfg, n)
		cfg.close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", cfg.name, err)
		}
		if i == 0 {
			floor = r.HeapInuse
		}
		r.OverFloor = round2(r.HeapInuse - floor)
		over := fmt.Sprintf("%+.2f KB", r.OverFloor/1024)
		if i == 0 {
			over = "-"
		}
		fmt.Fprintf(stdout, "%-44s %7.2f KB %9.2f KB %11s %8.2f KB %11.2f\n", r.Config,
			r.HeapInuse/1024, r.BeyondBody/1024, over, r.Stack/1024, r.Goroutines)
		out = append(out, r)
	}
	if len(out) == 3 {
		fmt.Fprintf(stdout, "llmfleet's own heap per parked request beyond its body (over the net/http floor): %.2f KB with a parking Submitter, %.2f KB with the dispatcher's pool (target < 2 KB)\n",
			out[1].OverFloor/1024, out[2].OverFloor/1024)
	}
	return out, nil
}

// parkFloor is a plain net/http handler that reads the body and waits.
func parkFloor() (*parkConfig, error) {
	var active atomic.Int64
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := make([]byte, max(r.ContentLength, 0))
		if _, err := io.ReadFull(r.Body, body); err != nil {
			return
		}
		active.Add(1)
		defer active.Add(-1)
		<-r.Context().Done()
		runtime.KeepAlive(body)
	})
	return &parkConfig{name: "net/http floor (handler holds the body)", handler: h, parked: active.Load, close: func() {}}, nil
}

// parkProxyOnly is llmfleet's handler with a Submitter that holds every
// request until its caller leaves: the proxy's own cost.
func parkProxyOnly() (*parkConfig, error) {
	sub := &parkingSubmitter{}
	srv := &proxy.Server{Submitter: sub, Upstream: &url.URL{Scheme: "http", Host: "127.0.0.1:9"}, Access: func(proxy.Access) {}}
	return &parkConfig{name: "llmfleet proxy, Submitter that parks", handler: srv.Handler(), parked: sub.active.Load,
		release: sub.release, close: func() {}}, nil
}

// parkProxyDispatcher is llmfleet's handler with a real dispatcher whose
// pool holds every request (a window of hours, a minimum batch size above
// n): the whole of llmfleet serve's cost.
func parkProxyDispatcher() (*parkConfig, error) {
	emu := &emulator.Server{Turnaround: func(string, *rand.Rand) time.Duration { return time.Second }}
	emuURL, stopEmu, err := serveLoopback(emu)
	if err != nil {
		return nil, err
	}
	d := &dispatch.Dispatcher{
		Providers: []llmfleet.Provider{&claude.Provider{BaseURL: emuURL}},
		Policy:    dispatch.Policy{BatchWindow: 2 * time.Hour, BatchMinSize: emulator.MaxBatchRequests, BatchMaxSize: emulator.MaxBatchRequests},
	}
	if err := d.Open(); err != nil {
		stopEmu()
		return nil, err
	}
	up, _ := url.Parse(emuURL)
	srv := &proxy.Server{Submitter: d, Upstream: up, Access: func(proxy.Access) {}} // the access log on, as in serve
	return &parkConfig{
		name:    "llmfleet proxy + dispatcher pool",
		handler: srv.Handler(),
		parked:  func() int64 { return d.Stats().QueueDepth },
		release: func() {}, // closing the dispatcher answers them
		close: func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			d.Close(ctx)
			stopEmu()
		},
	}, nil
}

// parkOnce serves cfg, has a child process park n requests on it and
// measures the server's memory growth.
func parkOnce(ctx context.Context, cfg *parkConfig, n int) (parkResult, error) {
	res := parkResult{Config: cfg.name, Parked: n, BodyBytes: len(parkBody(0))}
	base, stop, err := serveLoopback(cfg.handler)
	if err != nil {
		return res, err
	}
	defer stop()
	exe, err := os.Executable()
	if err != nil {
		return res, err
	}

	var before, after runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&before)
	g0 := runtime.NumGoroutine()

	cmd := exec.CommandContext(ctx, exe, parkClientCommand, "-url", base, "-n", fmt.Sprint(n),
		"-header", proxy.HeaderBudget+": 3600000")
	cmd.Env = envflag.ChildEnv()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return res, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return res, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopChild := func() {
		stdin.Close() // the child closes its connections and exits
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	}

	deadline := time.Now().Add(3 * time.Minute)
	for cfg.parked() < int64(n) {
		select {
		case err := <-exited:
			return res, fmt.Errorf("the client process ended early (%d of %d parked): %v", cfg.parked(), n, err)
		case <-ctx.Done():
			stopChild()
			return res, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			stopChild()
			return res, fmt.Errorf("only %d of %d requests parked", cfg.parked(), n)
		}
	}
	time.Sleep(200 * time.Millisecond) // let the connections' goroutines settle
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&after)
	g1 := runtime.NumGoroutine()
	stopChild()
	if cfg.release != nil {
		cfg.release()
	}
	// Wait for the handlers to see their callers leave.
	for end := time.Now().Add(30 * time.Second); cfg.release == nil && cfg.parked() > 0 && time.Now().Before(end); {
		time.Sleep(20 * time.Millisecond)
	}

	per := func(a, b uint64) float64 { return round2((float64(a) - float64(b)) / float64(n)) }
	res.HeapInuse = per(after.HeapInuse, before.HeapInuse)
	res.HeapAlloc = per(after.HeapAlloc, before.HeapAlloc)
	res.BeyondBody = round2(res.HeapInuse - float64(res.BodyBytes))
	res.Stack = per(after.StackInuse, before.StackInuse)
	res.Goroutines = round2(float64(g1-g0) / float64(n))
	return res, nil
}

// runParkClient is the child process of the memory benchmark: it opens n
// connections to -url, sends one POST /v1/messages on each and keeps them
// open, without reading, until its standard input ends (or, with
// -hold-stdin=false, until ctx ends).
func runParkClient(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet(parkClientCommand, flag.ContinueOnError)
	fs.SetOutput(stderr)
	base := fs.String("url", "", "base URL of the server")
	n := fs.Int("n", 10000, "requests to park")
	holdStdin := fs.Bool("hold-stdin", true, "hold the connections until standard input ends (else until interrupted)")
	var headers []string
	fs.Func("header", `extra request header "Name: value" (repeatable)`, func(v string) error {
		headers = append(headers, v)
		return nil
	})
	if err := fs.Parse(args); err != nil {
		return err
	}
	u, err := url.Parse(*base)
	if err != nil || u.Host == "" {
		return fmt.Errorf("-url %q is not a base URL", *base)
	}
	var head strings.Builder
	fmt.Fprintf(&head, "POST /v1/messages HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nX-Api-Key: sk-bench-park\r\nAnthropic-Version: 2023-06-01\r\n", u.Host)
	for _, h := range headers {
		head.WriteString(h + "\r\n")
	}

	conns := make([]net.Conn, *n)
	var failed atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	sem := make(chan struct{}, 128)
	var d net.Dialer
	for i := range *n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			c, err := d.DialContext(ctx, "tcp", u.Host)
			if err == nil {
				body := parkBody(i)
				_, err = fmt.Fprintf(c, "%sContent-Length: %d\r\n\r\n%s", head.String(), len(body), body)
				conns[i] = c
			}
			if err != nil {
				failed.Add(1)
				once.Do(func() { firstErr = err })
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
		return fmt.Errorf("%d of %d connections failed: %v", failed.Load(), *n, firstErr)
	}
	fmt.Fprintf(stdout, "parked %d\n", *n)
	if *holdStdin {
		// Hold the connections until the parent closes our standard input.
		bufio.NewReader(os.Stdin).WriteTo(io.Discard)
	} else {
		<-ctx.Done()
	}
	for _, c := range conns {
		c.Close()
	}
	return nil
}

// runParkBench is llmfleet-bench park: the process memory each parked
// batched caller costs, in three server configurations.
func runParkBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("llmfleet-bench park", flag.ContinueOnError)
	fs.SetOutput(stderr)
	n := fs.Int("n", 10000, "parked batched callers")
	if err := envflag.Parse(fs, args, os.Getenv); err != nil {
		return err
	}
	if *n < 1 || fs.NArg() > 0 {
		return errors.New("-n must be positive, and no arguments are taken")
	}
	fmt.Fprintf(stdout, "Parked batched requests: %d callers (a child process) each waiting on one non-streaming POST /v1/messages\n", *n)
	res, err := measurePark(ctx, *n, stdout)
	if err != nil {
		return err
	}
	for _, r := range res {
		fmt.Fprintf(stdout, "%-40s %.1f KB per caller (heap %.1f KB + stack %.1f KB)\n", r.Config,
			(r.HeapInuse+r.Stack)/1000, r.HeapInuse/1000, r.Stack/1000)
	}
	if len(res) == 3 {
		per := (res[2].HeapInuse + res[2].Stack) / 1000
		verdict := "met"
		if per >= 20 {
			verdict = "NOT met"
		}
		fmt.Fprintf(stdout, "goal: under 20 KB per parked caller with the dispatcher: %.1f KB, %s\n", per, verdict)
	}
	out, _ := json.Marshal(res)
	fmt.Fprintf(stdout, "\n%s\n", out)
	return nil
}
