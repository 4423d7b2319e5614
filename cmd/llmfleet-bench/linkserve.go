//go:build linkserve

package main

// Built with -tags linkserve, the benchmark command links every package
// llmfleet serve links, and runs their init functions, though its bare
// proxy calls none of them: run as a "bare=PATH" variant, it measures the
// same bare reverse proxy in a binary of serve's weight (see
// docs/benchmarks.md).
import _ "github.com/llmfleet/llmfleet/internal/serve"
