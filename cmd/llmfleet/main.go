// Command llmfleet runs the llmfleet proxy and the provider emulator.
//
//	llmfleet serve    [flags]   the transparent batching proxy
//	llmfleet emulate  [flags]   a local stand-in for the Anthropic API
//	llmfleet stats    [flags]   what the fleet paid, would have paid and saved
//	llmfleet simulate [flags]   what a workload would cost under a policy
//	llmfleet version            the version of the binary (also --version)
//
// Every flag may also be set in the environment as LLMFLEET_<FLAG>.
//
// Run "llmfleet <command> -h" for the flags of a command. The benchmarks
// are a command of their own, llmfleet-bench, not part of this binary.
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

// commands maps a subcommand name to its entry point. Each entry point
// parses its own flags from args and runs until ctx ends.
var commands = map[string]func(ctx context.Context, args []string, stdout, stderr io.Writer) error{}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	if args[0] == "--version" || args[0] == "-version" {
		args[0] = "version"
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "llmfleet: unknown command %q\n", args[0])
		usage(stderr)
		return 2
	}
	if err := cmd(ctx, args[1:], stdout, stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "llmfleet %s: %v\n", args[0], err)
		return 1
	}
	return 0
}

func usage(w io.Writer) {
	fmt.Fprintln(w, `usage: llmfleet <command> [flags]

commands:
  serve     run the batching proxy (speaks the Anthropic HTTP API)
  emulate   run a local emulator of the Anthropic Messages and Batches APIs
  stats     print what the fleet paid, would have paid and saved, by model and route
  simulate  run a workload through the engine on a virtual clock: cost and broken budgets per policy
  version   print the version of the binary (also: llmfleet --version)

Every flag may also be set in the environment as LLMFLEET_<FLAG> (upper
case, dashes as underscores); a flag on the command line wins.`)
}
