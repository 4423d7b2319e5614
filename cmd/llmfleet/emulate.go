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

// parseTurnarounds parses the --turnaround flag (see
// emulator.ParseDurations).
func parseTurnarounds(s string) (func(model string, r *rand.Rand) time.Duration, error) {
	return emulator.ParseDurations("--turnaround", s)
}
