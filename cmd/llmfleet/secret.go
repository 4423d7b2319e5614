package main

import "github.com/llmfleet/llmfleet/internal/servestate"

// SecretEnv names the environment variable by which an operator gives the
// vault's secret instead of a file (see servestate.SecretEnv).
const SecretEnv = servestate.SecretEnv
