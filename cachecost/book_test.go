package cachecost

import (
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
)

// agentPrompt is an agent's turn: a shared system prompt (1h), the
// conversation so far (5m), bytes at 4 per token.
func agentPrompt(convTokens int64) llmfleet.Prompt {
	return llmfleet.Prompt{Bytes: 4 * (convTokens + 2000), Tokens: convTokens + 2000, Conversation: "conv1", Breakpoints: []llmfleet.Breakpoint{
		{Hash: "sys", Bytes: 4 * 10_000, Tokens: 10_000, TTL: time.Hour},
		{Hash: "conv" + string(rune('a'+convTokens/10_000)), Bytes: 4 * convTokens, Tokens: convTokens, TTL: 5 * time.Minute},
	}}
}

func TestBookLearnsTokensAndEntries(t *testing.T) {
	var b Book
	p := agentPrompt(30_000)
	r, missing := b.Request("m", "k", p, 500)
	if len(missing) != 2 || r.Points[1].Tokens != 30_000 || r.Points[1].Cache != (Entry{}) {
		t.Fatalf("before any usage: %+v, missing %v", r, missing)
	}
	// The first turn, sync: everything written (the model's tokenizer
	// makes fewer tokens of the bytes than 1 in 4).
	u := llmfleet.Usage{InputTokens: 600, CacheCreationInputTokens: 9000}
	u.CacheCreation.Ephemeral5mInputTokens = 6000
	u.CacheCreation.Ephemeral1hInputTokens = 3000
	stat, changed := b.Observe(Lookup{Provider: "anthropic", Model: "m", Cred: "k", Prompt: p, Route: llmfleet.RouteSync,
		At: t0, Usage: u})
	if stat != nil {
		t.Errorf("a lookup of nothing believed cached counted: %+v", stat)
	}
	if len(changed) != 2 || !changed[0].SyncUntil.Equal(t0.Add(time.Hour)) || !changed[1].SyncUntil.Equal(t0.Add(5*time.Minute)) ||
		changed[1].Tokens != 9000 {
		t.Fatalf("changed %+v", changed)
	}
	r, missing = b.Request("m", "k", p, 500)
	if len(missing) != 0 || r.Points[1].Tokens != 9000 || !r.Points[1].Cache.SyncUntil.Equal(t0.Add(5*time.Minute)) {
		t.Fatalf("after the first turn: %+v, missing %v", r, missing)
	}
	if want := int64(9600); r.Tokens != want {
		t.Errorf("whole input %d tokens, want %d (learned tokens per byte)", r.Tokens, want)
	}
	// Under another credential nothing is cached.
	if r2, _ := b.Request("m", "other", p, 500); r2.Points[1].Cache != (Entry{}) {
		t.Errorf("another credential sees the entries: %+v", r2.Points[1].Cache)
	}
}

func TestBookLearnsHitRates(t *testing.T) {
	var b Book
	p := agentPrompt(30_000)
	r, _ := b.Request("m", "k", p, 0)
	believed := r.Points
	believed[1].Cache = Entry{BatchUntil: t0.Add(time.Hour)}
	// Four batch lookups of a batch-written entry: one hit.
	for i := range 4 {
		u := llmfleet.Usage{InputTokens: 2000, CacheCreationInputTokens: 30_000}
		if i == 0 {
			u = llmfleet.Usage{InputTokens: 2000, CacheReadInputTokens: 30_000}
		}
		stat, _ := b.Observe(Lookup{Provider: "anthropic", Model: "m", Cred: "k", Prompt: p, Route: llmfleet.RouteBatch,
			At: t0, Believed: believed, Usage: u})
		if stat == nil || stat.Lookup != llmfleet.RouteBatch || stat.Entry != llmfleet.RouteBatch || stat.Hits != int64(1-min(i, 1)) {
			t.Fatalf("observation %d: %+v", i, stat)
		}
	}
	// (1 hit + 0.5 prior × 4) / (4 + 4)
	if r := b.Rates("anthropic", "m", "k"); !near(r.Batch, 3.0/8) || r.Sync != 1 || !near(r.Cross, Priors.Cross) {
		t.Fatalf("rates %+v", r)
	}
	// A sync lookup of an entry only the batch cache holds, missed.
	stat, _ := b.Observe(Lookup{Provider: "anthropic", Model: "m", Cred: "k", Prompt: p, Route: llmfleet.RouteSync,
		At: t0, Believed: believed, Usage: llmfleet.Usage{InputTokens: 2000, CacheCreationInputTokens: 30_000}})
	if stat == nil || stat.Entry != llmfleet.RouteBatch || stat.Hits != 0 {
		t.Fatalf("cross observation %+v", stat)
	}
	// Loaded sums replace what was counted here.
	b.Load([]llmfleet.CacheStat{{Provider: "anthropic", Model: "m", CredentialID: "k", Lookup: llmfleet.RouteBatch,
		Entry: llmfleet.RouteBatch, Lookups: 96, Hits: 96}})
	if r := b.Rates("anthropic", "m", "k"); !near(r.Batch, (96+2.0)/100) {
		t.Fatalf("rates after Load %+v", r)
	}
}

func TestBookConversationsAndMerge(t *testing.T) {
	var b Book
	if c := b.Current("k", "conv1", t0); c != "" {
		t.Fatalf("a new conversation: %q", c)
	}
	b.Routed("k", "conv1", llmfleet.RouteFlex, t0)
	if c := b.Current("k", "conv1", t0.Add(time.Minute)); c != llmfleet.RouteSync {
		t.Fatalf("after a flex turn: %q, want the sync cache", c)
	}
	if c := b.Current("k", "conv1", t0.Add(3*time.Hour)); c != "" {
		t.Fatalf("long after: %q", c)
	}
	b.Merge([]llmfleet.PrefixState{{CredentialID: "k", Hash: "sys", Tokens: 12_345, BatchUntil: t0.Add(time.Hour)}})
	r, missing := b.Request("m", "k", agentPrompt(30_000), 0)
	if r.Points[0].Tokens != 12_345 || !r.Points[0].Cache.BatchUntil.Equal(t0.Add(time.Hour)) || len(missing) != 1 {
		t.Fatalf("after Merge: %+v, missing %v", r, missing)
	}
}

// A turn's lookup looks back from its breakpoint to the prefix the
// conversation's previous turn cached (its breakpoint then, an earlier
// block now): the Book puts it in the request as a point, with what it
// knows of it, so that a warm conversation's next turn is priced as the
// read it is.
func TestBookLooksBackToTheLastTurn(t *testing.T) {
	var b Book
	turn1 := llmfleet.Prompt{Bytes: 40_000, Breakpoints: []llmfleet.Breakpoint{{Hash: "t1", Bytes: 40_000, TTL: 5 * time.Minute}}}
	u := llmfleet.Usage{InputTokens: 5, CacheCreationInputTokens: 10_000}
	b.Observe(Lookup{Provider: "anthropic", Model: "m", Cred: "k", Prompt: turn1, Route: llmfleet.RouteSync, At: t0, Usage: u})
	turn2 := llmfleet.Prompt{Bytes: 48_000, Breakpoints: []llmfleet.Breakpoint{{Hash: "t2", Bytes: 48_000, TTL: 5 * time.Minute,
		Earlier: []llmfleet.Prefix{{Hash: "a1", Bytes: 44_000}, {Hash: "t1", Bytes: 40_000}}}}}
	r, missing := b.Request("m", "k", turn2, 0)
	if len(r.Points) != 2 || r.Points[0].Hash != "t1" || r.Points[0].Tokens != 10_000 || r.Points[0].TTL != 0 ||
		!r.Points[0].Cache.SyncUntil.Equal(t0.Add(5*time.Minute)) || r.Points[1].Hash != "t2" {
		t.Fatalf("turn 2's points %+v", r.Points)
	}
	if len(missing) != 2 {
		t.Errorf("missing %v, want t2 and a1 (unknown)", missing)
	}
	m := Model{Prices: sonnet, Rates: Priors}
	e := m.Cost(r, Option{Route: llmfleet.RouteSync, At: t0.Add(time.Minute)})
	if !near(e.Hit, 1) || !near(e.Read, 10_000) || !near(e.Write5m, float64(r.Points[1].Tokens-10_000)) {
		t.Fatalf("turn 2 sync: %+v", e)
	}
	// Turn 2 answered sync, reading turn 1's prefix and writing its own:
	// both entries refreshed or written.
	u2 := llmfleet.Usage{InputTokens: 5, CacheReadInputTokens: 10_000, CacheCreationInputTokens: 2_000}
	stat, changed := b.Observe(Lookup{Provider: "anthropic", Model: "m", Cred: "k", Prompt: turn2, Route: llmfleet.RouteSync,
		At: t0.Add(time.Minute), Usage: u2})
	if stat == nil || stat.Hits != 1 || len(changed) != 2 || changed[1].Tokens != 12_000 {
		t.Fatalf("turn 2 observed: %+v, changed %+v", stat, changed)
	}
}

// A rate's prior is what the provider's other models and credentials
// show: a model never batched starts from the batch cache's rate its
// provider measured elsewhere, not from the stated prior.
func TestRatesStartFromTheProvidersOtherLookups(t *testing.T) {
	var b Book
	b.Load([]llmfleet.CacheStat{
		{Provider: "anthropic", Model: "haiku", CredentialID: "k1", Lookup: llmfleet.RouteBatch, Entry: llmfleet.RouteBatch, Lookups: 36, Hits: 36},
		{Provider: "openai", Model: "gpt", CredentialID: "k1", Lookup: llmfleet.RouteBatch, Entry: llmfleet.RouteBatch, Lookups: 36, Hits: 0},
	})
	pooled := (36 + 0.5*4) / 40.0
	if r := b.Rates("anthropic", "sonnet", "k2"); !near(r.Batch, pooled) {
		t.Errorf("a model never batched: %v, want the provider's other lookups %v", r.Batch, pooled)
	}
	// Its own lookups count against that prior; its own are not pooled twice.
	b.Load([]llmfleet.CacheStat{
		{Provider: "anthropic", Model: "haiku", CredentialID: "k1", Lookup: llmfleet.RouteBatch, Entry: llmfleet.RouteBatch, Lookups: 36, Hits: 36},
		{Provider: "anthropic", Model: "sonnet", CredentialID: "k2", Lookup: llmfleet.RouteBatch, Entry: llmfleet.RouteBatch, Lookups: 4, Hits: 0},
	})
	if r, want := b.Rates("anthropic", "sonnet", "k2"), (0+pooled*4)/8; !near(r.Batch, want) {
		t.Errorf("with its own misses: %v, want %v", r.Batch, want)
	}
	if r := b.Rates("anthropic", "haiku", "k1"); !near(r.Batch, (36+(0+0.5*4)/8*4)/40) {
		t.Errorf("haiku: %v", r.Batch)
	}
}

// A batch item that reads a prefix other conversations share, believed
// to be only in the sync cache, may have read what another
// conversation's batched turn wrote to the batch cache unknown to the
// Book: no observation of the cross rate (which a shared system prompt
// would otherwise teach to be high).
func TestNoCrossObservationOfASharedPrefix(t *testing.T) {
	var b Book
	sys := llmfleet.Breakpoint{Hash: "sys", Bytes: 40_000, Tokens: 10_000, TTL: time.Hour}
	prompt := func(conv string) llmfleet.Prompt {
		return llmfleet.Prompt{Bytes: 48_000, Tokens: 12_000, Conversation: conv, Breakpoints: []llmfleet.Breakpoint{sys,
			{Hash: "t-" + conv, Bytes: 48_000, Tokens: 12_000, TTL: 5 * time.Minute}}}
	}
	write := llmfleet.Usage{InputTokens: 5, CacheCreationInputTokens: 12_000}
	read := llmfleet.Usage{InputTokens: 5, CacheReadInputTokens: 10_000, CacheCreationInputTokens: 2_000}
	b.Observe(Lookup{Provider: "anthropic", Model: "m", Cred: "k", Prompt: prompt("a"), Route: llmfleet.RouteSync, At: t0, Usage: write})
	// Unshared so far: a batch read of it is a cross observation.
	if stat, _ := b.Observe(Lookup{Provider: "anthropic", Model: "m", Cred: "k", Prompt: prompt("a"), Route: llmfleet.RouteBatch,
		At: t0.Add(time.Minute), Usage: llmfleet.Usage{InputTokens: 5, CacheReadInputTokens: 12_000}}); stat == nil || stat.Entry != llmfleet.RouteSync || stat.Hits != 1 {
		t.Fatalf("unshared: %+v", stat)
	}
	b.Observe(Lookup{Provider: "anthropic", Model: "m", Cred: "k", Prompt: prompt("b"), Route: llmfleet.RouteSync, At: t0.Add(2 * time.Minute), Usage: read})
	p := prompt("c")
	p.Breakpoints = p.Breakpoints[:1]
	if stat, _ := b.Observe(Lookup{Provider: "anthropic", Model: "m", Cred: "k", Prompt: p, Route: llmfleet.RouteBatch,
		At: t0.Add(3 * time.Minute), Usage: llmfleet.Usage{InputTokens: 5, CacheReadInputTokens: 10_000}}); stat != nil {
		t.Errorf("a shared prefix counted across the caches: %+v", stat)
	}
}
