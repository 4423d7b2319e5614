package emulator

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/llmfleet/llmfleet/cachesim"
)

// The rules of the prompt cache (package cachesim), one test each, over
// real HTTP with the official SDK.

// agentPrompt is a turn of an agent: a long system prompt with a
// breakpoint of sysTTL, the agent's conversation with one of convTTL, and
// a question.
func agentPrompt(sysTTL, convTTL anthropic.CacheControlEphemeralTTL, question string) anthropic.MessageNewParams {
	return anthropic.MessageNewParams{
		Model: "claude-sonnet-4-6", MaxTokens: 100,
		System: []anthropic.TextBlockParam{{Text: strings.Repeat("You are a coding agent. ", 60),
			CacheControl: anthropic.CacheControlEphemeralParam{TTL: sysTTL}}},
		Messages: []anthropic.MessageParam{
			anthropic.NewUserMessage(anthropic.ContentBlockParamUnion{OfText: &anthropic.TextBlockParam{
				Text: strings.Repeat("Here is the repository. ", 40), CacheControl: anthropic.CacheControlEphemeralParam{TTL: convTTL}}}),
			anthropic.NewAssistantMessage(anthropic.NewTextBlock("Read it.")),
			anthropic.NewUserMessage(anthropic.NewTextBlock(question)),
		},
	}
}

const (
	ttl1h = anthropic.CacheControlEphemeralTTLTTL1h
	ttl5m = anthropic.CacheControlEphemeralTTLTTL5m
)

// batchUsages runs params as one batch and returns its results' usage by
// custom_id.
func batchUsages(t *testing.T, e *env, params []anthropic.MessageNewParams) map[string]anthropic.Usage {
	t.Helper()
	c := sdkClient(e)
	ctx := context.Background()
	var reqs []anthropic.MessageBatchNewParamsRequest
	for i, p := range params {
		reqs = append(reqs, anthropic.MessageBatchNewParamsRequest{CustomID: fmt.Sprintf("r%d", i),
			Params: anthropic.MessageBatchNewParamsRequestParams{Model: p.Model, MaxTokens: p.MaxTokens, System: p.System, Messages: p.Messages}})
	}
	b, err := c.Messages.Batches.New(ctx, anthropic.MessageBatchNewParams{Requests: reqs})
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Minute)
	out := map[string]anthropic.Usage{}
	rs := c.Messages.Batches.ResultsStreaming(ctx, b.ID, anthropic.MessageBatchResultsParams{})
	for rs.Next() {
		r := rs.Current()
		if r.Result.Type != "succeeded" || r.Result.Message.Usage.ServiceTier != "batch" {
			t.Fatalf("result %s", r.RawJSON())
		}
		out[r.CustomID] = r.Result.Message.Usage
	}
	if err := rs.Err(); err != nil || len(out) != len(params) {
		t.Fatalf("results: %v, %d of %d", err, len(out), len(params))
	}
	return out
}

// syncUsage sends params sync and returns its usage.
func syncUsage(t *testing.T, e *env, params anthropic.MessageNewParams) anthropic.Usage {
	t.Helper()
	c := sdkClient(e)
	m, err := c.Messages.New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	if m.Usage.ServiceTier != "standard" {
		t.Fatalf("service tier %q", m.Usage.ServiceTier)
	}
	return m.Usage
}

// Batch requests read the batch cache at BatchHitRate: of N requests
// sharing a prefix a first batch wrote, about that share read it.
func TestCacheBatchHitRate(t *testing.T) {
	for _, rate := range []float64{0.3, 0.7} {
		t.Run(fmt.Sprint(rate), func(t *testing.T) {
			e := newEnv(t)
			e.s.Cache = &cachesim.Config{SyncHitRate: 1, BatchHitRate: rate}
			batchUsages(t, e, []anthropic.MessageNewParams{agentPrompt(ttl1h, ttl1h, "prime")})
			const n = 250
			var params []anthropic.MessageNewParams
			for i := range n {
				params = append(params, agentPrompt(ttl1h, ttl1h, fmt.Sprint("question ", i)))
			}
			hits := 0
			for _, u := range batchUsages(t, e, params) {
				if u.CacheReadInputTokens > 0 {
					hits++
				} else if u.CacheCreation.Ephemeral1hInputTokens == 0 {
					t.Fatalf("a miss wrote nothing: %+v", u)
				}
			}
			if got := float64(hits) / n; got < rate-0.08 || got > rate+0.08 {
				t.Fatalf("%d of %d read the cache (%.2f), want about %.2f", hits, n, got, rate)
			}
		})
	}
}

// What a sync call wrote, a batch does not read by default (CrossRate
// 0), and reads with CrossRate 1; the reverse likewise.
func TestCacheCrossVisibility(t *testing.T) {
	for _, cross := range []float64{0, 1} {
		t.Run(fmt.Sprint(cross), func(t *testing.T) {
			e := newEnv(t)
			if cross > 0 {
				e.s.Cache = &cachesim.Config{SyncHitRate: 1, BatchHitRate: 1, CrossRate: cross}
			}
			w := syncUsage(t, e, agentPrompt(ttl1h, ttl1h, "sync writes"))
			prefix := w.CacheCreation.Ephemeral1hInputTokens
			if prefix == 0 || w.CacheReadInputTokens != 0 {
				t.Fatalf("first sync call: %+v", w)
			}
			b := batchUsages(t, e, []anthropic.MessageNewParams{agentPrompt(ttl1h, ttl1h, "batch reads?")})["r0"]
			if want := int64(cross) * prefix; b.CacheReadInputTokens != want {
				t.Fatalf("batch after sync read %d, want %d: %+v", b.CacheReadInputTokens, want, b)
			}
			// Another key sees neither.
			other := agentPrompt(ttl1h, ttl1h, "other key")
			c := sdkClient(e)
			m, err := c.Messages.New(context.Background(), other, option.WithAPIKey("key-b"))
			if err != nil || m.Usage.CacheReadInputTokens != 0 {
				t.Fatalf("other key: %v %+v", err, m.Usage)
			}
		})
	}
	// Batch-written, sync-read: only across.
	e := newEnv(t)
	batchUsages(t, e, []anthropic.MessageNewParams{agentPrompt(ttl5m, ttl5m, "batch writes")})
	if u := syncUsage(t, e, agentPrompt(ttl5m, ttl5m, "sync reads?")); u.CacheReadInputTokens != 0 {
		t.Fatalf("sync read the batch's entry: %+v", u)
	}
}

// A 1h breakpoint's prefix is billed as 1h writes, the rest up to the
// last breakpoint as 5m writes; after 10 minutes only the 1h entry lives;
// after two hours neither does.
func TestCache1hAnd5mWrites(t *testing.T) {
	e := newEnv(t)
	p := agentPrompt(ttl1h, ttl5m, "which TTL?")
	first := syncUsage(t, e, p)
	sys, conv := first.CacheCreation.Ephemeral1hInputTokens, first.CacheCreation.Ephemeral5mInputTokens
	if sys == 0 || conv == 0 || first.CacheCreationInputTokens != sys+conv || first.CacheReadInputTokens != 0 {
		t.Fatalf("first: %+v", first)
	}
	e.clock.Advance(10 * time.Minute)
	if u := syncUsage(t, e, p); u.CacheReadInputTokens != sys || u.CacheCreation.Ephemeral5mInputTokens != conv ||
		u.CacheCreation.Ephemeral1hInputTokens != 0 {
		t.Fatalf("after 10m: %+v", u)
	}
	e.clock.Advance(2 * time.Hour)
	if u := syncUsage(t, e, p); u.CacheReadInputTokens != 0 || u.CacheCreation.Ephemeral1hInputTokens != sys ||
		u.CacheCreation.Ephemeral5mInputTokens != conv {
		t.Fatalf("after 2h: %+v", u)
	}
}

// A hit refreshes the entry's TTL: read every 4 minutes, a 5-minute entry
// lives on; left 6 minutes, it lapses.
func TestCacheTTLRefresh(t *testing.T) {
	e := newEnv(t)
	p := agentPrompt(ttl5m, ttl5m, "refresh")
	w := syncUsage(t, e, p).CacheCreationInputTokens
	for i := range 4 {
		e.clock.Advance(4 * time.Minute)
		if u := syncUsage(t, e, p); u.CacheReadInputTokens != w {
			t.Fatalf("read %d at %dm: %+v", i, 4*(i+1), u)
		}
	}
	e.clock.Advance(6 * time.Minute)
	if u := syncUsage(t, e, p); u.CacheReadInputTokens != 0 || u.CacheCreationInputTokens != w {
		t.Fatalf("after 6 idle minutes: %+v", u)
	}
}

// A batch request uses the cache when it finishes, not when its batch
// ends: a sync call between the two (reading across) sees its entry.
func TestCacheBatchRequestRunsAtItsFinish(t *testing.T) {
	e := newEnv(t)
	e.s.Cache = &cachesim.Config{SyncHitRate: 1, BatchHitRate: 1, CrossRate: 1}
	c := sdkClient(e)
	ctx := context.Background()
	p := agentPrompt(ttl5m, ttl5m, "[turnaround:2s] early")
	b, err := c.Messages.Batches.New(ctx, anthropic.MessageBatchNewParams{Requests: []anthropic.MessageBatchNewParamsRequest{{
		CustomID: "early", Params: anthropic.MessageBatchNewParamsRequestParams{Model: p.Model, MaxTokens: p.MaxTokens, System: p.System, Messages: p.Messages}}}})
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(5 * time.Second) // the batch ends after 10s or more
	u := syncUsage(t, e, agentPrompt(ttl5m, ttl5m, "after it"))
	if u.CacheReadInputTokens == 0 {
		t.Fatalf("the sync call did not see the finished batch request's entry: %+v", u)
	}
	if g, err := c.Messages.Batches.Get(ctx, b.ID, anthropic.MessageBatchGetParams{}); err != nil || g.ProcessingStatus != anthropic.MessageBatchProcessingStatusInProgress {
		t.Fatalf("the batch ended already: %v %v", err, g.ProcessingStatus)
	}
}
