package main

import (
	"os"
	"testing"
)

// TestMain keeps the tests' databases out of the user's data directory:
// "llmfleet serve" without --db writes under $XDG_DATA_HOME. It removes
// the binary the crash tests built, if any.
func TestMain(m *testing.M) {
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
