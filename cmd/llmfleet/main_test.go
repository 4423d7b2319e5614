package main

import (
	"flag"
	"os"
	"testing"
)

// TestMain keeps the tests' databases out of the user's data directory:
// "llmfleet serve" without --db writes under $XDG_DATA_HOME. It removes
// the binary the crash tests built, if any. Unless -test.parallel is
// given, it runs up to 4 parallel tests at once rather than one per core:
// they are runs of the real binary that mostly wait (on turnarounds,
// leases and restarts), not work.
func TestMain(m *testing.M) {
	flag.Parse()
	parallelGiven := false
	flag.Visit(func(f *flag.Flag) { parallelGiven = parallelGiven || f.Name == "test.parallel" })
	if !parallelGiven {
		flag.Set("test.parallel", "4")
	}
	dir, err := os.MkdirTemp("", "llmfleet-test-data-")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_DATA_HOME", dir)
	os.Unsetenv(SecretEnv)
	code := m.Run()
	os.RemoveAll(dir)
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}
