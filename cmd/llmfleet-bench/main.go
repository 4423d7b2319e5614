// Command llmfleet-bench measures the llmfleet proxy on loopback against
// an in-process emulator: the latency and throughput its sync path adds
// over a bare reverse proxy, the delay to a stream's first byte, and the
// memory it holds per parked batched request.
//
//	llmfleet-bench [flags]
//	llmfleet-bench economics [flags]
//
// The economics mode runs one workload through the simulator and through
// llmfleet serve against llmfleet emulate with scaled time, and compares
// their routes, budget misses and costs.
//
// Run "llmfleet-bench -h" for the flags. It is a development tool, built
// apart from the llmfleet command.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run runs the benchmark, or with parkClientCommand first the parked
// callers of its memory part, and returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmd := runBench
	if len(args) > 0 && args[0] == parkClientCommand {
		cmd, args = runParkClient, args[1:]
	} else if len(args) > 0 && args[0] == economicsCommand {
		cmd, args = runEconomics, args[1:]
	}
	if err := cmd(ctx, args, stdout, stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "llmfleet-bench: %v\n", err)
		return 1
	}
	return 0
}
