package main

import (
	"context"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
)

func TestParseTurnarounds(t *testing.T) {
	f, err := parseTurnarounds("2s-6s, claude-opus-4-6=30s-90s,claude-haiku-4-5=1s")
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 100 {
		if d := f("claude-sonnet-4-6", r); d < 2*time.Second || d > 6*time.Second {
			t.Fatalf("default model: %s", d)
		}
		if d := f("claude-opus-4-6", r); d < 30*time.Second || d > 90*time.Second {
			t.Fatalf("opus: %s", d)
		}
		if d := f("claude-haiku-4-5", r); d != time.Second {
			t.Fatalf("haiku: %s", d)
		}
	}
	if f, err := parseTurnarounds("claude-opus-4-6=1m"); err != nil || f("other", r) < 2*time.Second || f("claude-opus-4-6", r) != time.Minute {
		t.Fatalf("a pair alone keeps the default for other models: %v", err)
	}
	for _, bad := range []string{"", "soon", "6s-2s", "2s,3s", "=3s", "m=", "2s,m=x"} {
		if _, err := parseTurnarounds(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestParseLatenciesAndStragglers(t *testing.T) {
	f, err := parseLatencies("claude-opus-4-6=1s-2s")
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	if d := f("claude-sonnet-4-6", r); d != 0 {
		t.Errorf("unnamed model: %s, want 0", d)
	}
	if d := f("claude-opus-4-6", r); d < time.Second || d > 2*time.Second {
		t.Errorf("opus: %s", d)
	}
	if f, err := parseLatencies("30ms"); err != nil || f("m", r) != 30*time.Millisecond {
		t.Errorf("fixed latency: %v", err)
	}
	fixed := func(string, *rand.Rand) time.Duration { return time.Second }
	slow := withStragglers(fixed, 0.25, 10)
	n := 0
	for range 4000 {
		switch d := slow("m", r); d {
		case 10 * time.Second:
			n++
		case time.Second:
		default:
			t.Fatalf("straggler draw %s", d)
		}
	}
	if n < 800 || n > 1200 {
		t.Errorf("%d of 4000 stragglers, want about 1000", n)
	}
}

// The cache flags reach the emulator: with --cache-batch-hit-rate 0 and
// --cache-cross-rate 1, a batch request reads what a sync call cached
// (across) but never what a batch cached.
func TestEmulateCacheFlags(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	out := make(lineWriter, 4)
	done := make(chan error, 1)
	go func() {
		done <- runEmulate(ctx, []string{"--listen", "127.0.0.1:0", "--turnaround", "0s",
			"--cache-batch-hit-rate", "0", "--cache-cross-rate", "1"}, out, io.Discard)
	}()
	var base string
	select {
	case line := <-out:
		base = strings.TrimSpace(strings.TrimPrefix(line, "emulator listening on "))
	case err := <-done:
		t.Fatalf("emulate ended: %v", err)
	}
	client := anthropic.NewClient(option.WithBaseURL(base), option.WithAPIKey("k"), option.WithMaxRetries(0))
	params := func(sys, q string) anthropic.MessageNewParams {
		return anthropic.MessageNewParams{Model: "claude-sonnet-4-6", MaxTokens: 50,
			System: []anthropic.TextBlockParam{{Text: strings.Repeat(sys, 200),
				CacheControl: anthropic.CacheControlEphemeralParam{TTL: anthropic.CacheControlEphemeralTTLTTL1h}}},
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(q))}}
	}
	batchRead := func(p anthropic.MessageNewParams) int64 {
		t.Helper()
		b, err := client.Messages.Batches.New(ctx, anthropic.MessageBatchNewParams{Requests: []anthropic.MessageBatchNewParamsRequest{{
			CustomID: "q", Params: anthropic.MessageBatchNewParamsRequestParams{Model: p.Model, MaxTokens: p.MaxTokens, System: p.System, Messages: p.Messages}}}})
		if err != nil {
			t.Fatal(err)
		}
		for b.ProcessingStatus != anthropic.MessageBatchProcessingStatusEnded {
			if b, err = client.Messages.Batches.Get(ctx, b.ID, anthropic.MessageBatchGetParams{}); err != nil {
				t.Fatal(err)
			}
		}
		rs := client.Messages.Batches.ResultsStreaming(ctx, b.ID, anthropic.MessageBatchResultsParams{})
		var read int64 = -1
		for rs.Next() {
			read = rs.Current().Result.Message.Usage.CacheReadInputTokens
		}
		if rs.Err() != nil || read < 0 {
			t.Fatalf("results: %v", rs.Err())
		}
		return read
	}
	m, err := client.Messages.New(ctx, params("Prompt A. ", "sync"))
	if err != nil || m.Usage.CacheReadInputTokens != 0 || m.Usage.CacheCreation.Ephemeral1hInputTokens == 0 {
		t.Fatalf("sync: %v %+v", err, m.Usage)
	}
	if r := batchRead(params("Prompt A. ", "batch after sync")); r != m.Usage.CacheCreation.Ephemeral1hInputTokens {
		t.Fatalf("a batch after a sync call read %d, want %d", r, m.Usage.CacheCreation.Ephemeral1hInputTokens)
	}
	if r := batchRead(params("Prompt B. ", "batch first")); r != 0 {
		t.Fatalf("a first batch read %d", r)
	}
	if r := batchRead(params("Prompt B. ", "batch again")); r != 0 {
		t.Fatalf("a batch read a batch's entry at --cache-batch-hit-rate 0: %d", r)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]string{{"--cache-batch-hit-rate", "1.5"}, {"--cache-cross-rate", "-1"}, {"--cache-min-tokens", "-3"}} {
		if err := runEmulate(t.Context(), append([]string{"--listen", "127.0.0.1:0"}, bad...), io.Discard, io.Discard); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
}
