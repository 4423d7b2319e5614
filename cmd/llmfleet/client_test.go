package main

import (
	"context"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/llmfleet/llmfleet/emulator"
	"github.com/llmfleet/llmfleet/ledger"
	"github.com/llmfleet/llmfleet/proxy"
)

// With proxy-held keys, serve's ledger names each client as the config
// does, on the sync route and on the batch route, and
// /llmfleet/v1/stats breaks the cost down by those names.
func TestServeAttributesSpendToClientNames(t *testing.T) {
	t.Parallel() // serve in process, on its own port, state and key variable
	// The batch ends at once: the test is of the ledger, not of waiting.
	emu := httptest.NewServer(&emulator.Server{Turnaround: func(string, *rand.Rand) time.Duration { return 0 }})
	defer emu.Close()
	os.Setenv("LLMFLEET_TEST_CLIENTS_UPSTREAM", "sk-upstream-clients") // t.Setenv refuses a parallel test
	t.Cleanup(func() { os.Unsetenv("LLMFLEET_TEST_CLIENTS_UPSTREAM") })
	cfg := writeFile(t, "anthropic-url: "+emu.URL+"\nbatch-window: 5ms\npoll-interval: 2ms\nmax-poll-interval: 5ms\n"+
		"upstream-api-key-env: LLMFLEET_TEST_CLIENTS_UPSTREAM\nclient-keys:\n"+
		"  alice: "+proxy.HashKey("alice-proxy-key")+"\n  bob: "+proxy.HashKey("bob-proxy-key")+"\n")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := make(lineWriter, 4)
	logs := &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- runServe(ctx, []string{"--config", cfg, "--listen", "127.0.0.1:0",
			"--db", filepath.Join(t.TempDir(), "llmfleet.db")}, out, logs)
	}()
	var line string
	select {
	case line = <-out:
	case err := <-done:
		t.Fatalf("serve ended: %v\n%s", err, logs)
	}
	base := strings.Fields(strings.TrimPrefix(line, "llmfleet serving on "))[0]
	params := anthropic.MessageNewParams{Model: "claude-haiku-4-5", MaxTokens: 16,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hello"))}}
	alice := anthropic.NewClient(option.WithBaseURL(base), option.WithAPIKey("alice-proxy-key"), option.WithMaxRetries(0))
	bob := anthropic.NewClient(option.WithBaseURL(base), option.WithAPIKey("bob-proxy-key"), option.WithMaxRetries(0))
	if _, err := alice.Messages.New(ctx, params); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.Messages.New(ctx, params, option.WithHeader("llmfleet-route", "batch")); err != nil {
		t.Fatal(err)
	}
	var s ledger.Summary
	for deadline := time.Now().Add(10 * time.Second); ; {
		getJSON(t, base+"/llmfleet/v1/stats", &s)
		if s.SyncCalls+s.BatchedCalls == 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	a, b := s.ByClient["alice"], s.ByClient["bob"]
	if len(s.ByClient) != 2 || a.SyncCalls != 1 || b.BatchedCalls != 1 || a.CostUSD <= 0 || b.SavedUSD <= 0 {
		t.Fatalf("by client %+v, want alice 1 sync, bob 1 batched (saving)", s.ByClient)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logs.String(), "proxy-key") {
		t.Error("a client key is in the log")
	}
}
