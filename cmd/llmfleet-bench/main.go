// Command llmfleet-bench measures llmfleet serve; it is not part of the
// shipped llmfleet binary. It runs the llmfleet binary it is given
// (--llmfleet, default: "llmfleet" beside this command, else on $PATH)
// and never builds anything itself.
//
//	llmfleet-bench [flags]             serve against a bare httputil.ReverseProxy, over an HTTPS upstream
//	llmfleet-bench park [flags]        memory per parked batched caller
//	llmfleet-bench economics [flags]   simulate against serve on one workload
//	llmfleet-bench load [flags]        callers posting to a URL (scripts/bench-accept.sh runs it)
//
// Build both commands into one directory, then run it:
//
//	go build -o bin/ ./cmd/llmfleet ./cmd/llmfleet-bench && bin/llmfleet-bench
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

// Subcommands. The last three are the child processes of the benchmarks.
const (
	parkCommand       = "park"
	economicsCommand  = "economics"
	loadCommand       = "load"
	bareProxyCommand  = "bare-proxy"
	parkClientCommand = "park-client"
	upstreamCommand   = "upstream"
)

// run runs the subcommand args name (the proxy benchmark when args
// starts with a flag or is empty) and returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmd := runBench
	name := "llmfleet-bench"
	if len(args) > 0 {
		sub := map[string]func(context.Context, []string, io.Writer, io.Writer) error{
			parkCommand:       runParkBench,
			economicsCommand:  runEconomics,
			loadCommand:       runLoadClient,
			bareProxyCommand:  runBareProxy,
			parkClientCommand: runParkClient,
			upstreamCommand:   runUpstream,
		}
		if c, ok := sub[args[0]]; ok {
			cmd, name, args = c, name+" "+args[0], args[1:]
		}
	}
	if err := cmd(ctx, args, stdout, stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 1
	}
	return 0
}
