package main

import (
	"flag"

	"github.com/llmfleet/llmfleet/internal/envflag"
)

// parseFlags parses args into fs, then sets the flags not given from the
// environment (see envflag.Parse).
func parseFlags(fs *flag.FlagSet, args []string, getenv func(string) string) error {
	return envflag.Parse(fs, args, getenv)
}

// envUsage is the paragraph of a command's help on the environment.
const envUsage = envflag.Usage
