package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/llmfleet/llmfleet/emulator"
)

func init() { commands["emulate"] = runEmulate }

// runEmulate runs the provider emulator until ctx ends.
func runEmulate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("emulate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:8788", "address to listen on")
	turn := fs.String("turnaround", "2s-6s", `batch turnaround: a duration ("5s") or a uniform range ("2s-6s"), for every model, then model=range pairs for some ("2s-6s,claude-opus-4-6=30s-90s")`)
	seed := fs.Int64("seed", 0, "seed of the emulator's random choices")
	latency := fs.Duration("latency", 0, "delay of every synchronous /v1/messages reply")
	verbose := fs.Bool("v", false, "log every request")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	turnaround, err := parseTurnarounds(*turn)
	if err != nil {
		return err
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	srv := &emulator.Server{
		Seed:       *seed,
		Latency:    *latency,
		Logger:     logger,
		Turnaround: turnaround,
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stdout, "emulator listening on http://%s\n", ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = hs.Shutdown(shutCtx)
	if serr := <-errc; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}

// parseTurnarounds parses the --turnaround flag: comma-separated ranges
// (see parseTurnaround), the first for every model unless it is a
// model=range pair, the pairs for the models they name.
func parseTurnarounds(s string) (func(model string, r *rand.Rand) time.Duration, error) {
	type span struct{ lo, hi time.Duration }
	def := span{2 * time.Second, 6 * time.Second}
	perModel := map[string]span{}
	for i, part := range strings.Split(s, ",") {
		model, rng, isPair := strings.Cut(part, "=")
		if !isPair {
			if i > 0 {
				return nil, fmt.Errorf("--turnaround: %q: only the first range may be for every model; name the model of the others (model=range)", part)
			}
			rng, model = part, ""
		}
		model = strings.TrimSpace(model)
		if isPair && model == "" {
			return nil, fmt.Errorf("--turnaround: %q names no model", part)
		}
		lo, hi, err := parseTurnaround(rng)
		if err != nil {
			return nil, err
		}
		if isPair {
			perModel[model] = span{lo, hi}
		} else {
			def = span{lo, hi}
		}
	}
	return func(model string, r *rand.Rand) time.Duration {
		sp, ok := perModel[model]
		if !ok {
			sp = def
		}
		if sp.hi > sp.lo {
			return sp.lo + time.Duration(r.Int64N(int64(sp.hi-sp.lo)+1))
		}
		return sp.lo
	}, nil
}

// parseTurnaround parses "5s" or "2s-6s".
func parseTurnaround(s string) (lo, hi time.Duration, err error) {
	a, b, isRange := strings.Cut(s, "-")
	if lo, err = time.ParseDuration(strings.TrimSpace(a)); err != nil {
		return 0, 0, fmt.Errorf("--turnaround: %v", err)
	}
	hi = lo
	if isRange {
		if hi, err = time.ParseDuration(strings.TrimSpace(b)); err != nil {
			return 0, 0, fmt.Errorf("--turnaround: %v", err)
		}
	}
	if lo < 0 || hi < lo {
		return 0, 0, fmt.Errorf("--turnaround: %q is not a duration or a range lo-hi", s)
	}
	return lo, hi, nil
}
