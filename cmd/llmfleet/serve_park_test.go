package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/llmfleet/llmfleet/emulator"
)

// TestServeShutdownAnswersParkedConnections: batched callers that serve
// parks on their connections alone (no goroutine each) are answered at
// shutdown, as the dispatcher's close sends their pool out, before serve
// returns.
func TestServeShutdownAnswersParkedConnections(t *testing.T) {
	emu := &emulator.Server{Turnaround: func(string, *rand.Rand) time.Duration { return 0 }}
	emuTS := httptest.NewServer(emu)
	defer emuTS.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := make(lineWriter, 4)
	done := make(chan error, 1)
	go func() {
		done <- runServe(ctx, []string{"--listen", "127.0.0.1:0", "--anthropic-url", emuTS.URL,
			"--db", filepath.Join(t.TempDir(), "llmfleet.db"),
			"--batch-window", "1h", "--batch-min-size", "100", "--poll-interval", "2ms", "--max-poll-interval", "5ms",
			"--default-budget", "10m"}, out, io.Discard)
	}()
	var line string
	select {
	case line = <-out:
	case err := <-done:
		t.Fatalf("serve ended: %v", err)
	}
	base := strings.Fields(strings.TrimPrefix(line, "llmfleet serving on "))[0]

	client := anthropic.NewClient(option.WithBaseURL(base), option.WithAPIKey("sk-park"), option.WithMaxRetries(0))
	type result struct {
		text  string
		close bool
		err   error
	}
	const n = 3
	results := make(chan result, n)
	for i := range n {
		go func() {
			var raw *http.Response
			msg, err := client.Messages.New(context.Background(), anthropic.MessageNewParams{Model: "claude-test", MaxTokens: 50,
				Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(fmt.Sprint("parked ", i)))}},
				option.WithResponseInto(&raw))
			if err != nil {
				results <- result{err: err}
				return
			}
			results <- result{text: msg.Content[0].Text, close: raw.Close}
		}()
	}
	// Wait until all n are pooled.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the callers were not pooled")
		}
		resp, err := http.Get(base + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(b), fmt.Sprintf("\nllmfleet_queue_depth %d\n", n)) {
			break
		}
	}
	cancel()
	seen := map[string]bool{}
	for range n {
		r := <-results
		if r.err != nil || !r.close || !strings.HasPrefix(r.text, "Answer to: parked ") {
			t.Fatalf("caller: %+v", r)
		}
		seen[r.text] = true
	}
	if len(seen) != n {
		t.Fatalf("answers %v", seen)
	}
	if err := <-done; err != nil {
		t.Fatalf("serve: %v", err)
	}
}
