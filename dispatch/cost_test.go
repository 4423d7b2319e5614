package dispatch

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/cachecost"
	"github.com/llmfleet/llmfleet/pricing"
)

// agentTurn is turn n of an agent's conversation conv: a ~10k-token
// system prompt (its harness's: conversations of one harness share it)
// cached for an hour, n earlier exchanges of ~3k tokens each, the last
// user message marked for caching (5 minutes).
func agentTurn(harness, conv string, n int) []byte {
	pad := func(tokens int) string { return strings.Repeat("x", 4*tokens) }
	var msgs []string
	for i := 0; i <= n; i++ {
		user := fmt.Sprintf(`{"type":"text","text":"%s %d %s"`, conv, i, pad(1500))
		if i == n {
			user += `,"cache_control":{"type":"ephemeral"}`
		}
		msgs = append(msgs, `{"role":"user","content":[`+user+`}]}`)
		if i < n {
			msgs = append(msgs, fmt.Sprintf(`{"role":"assistant","content":"answer %d %s"}`, i, pad(1500)))
		}
	}
	return []byte(`{"model":"claude-sonnet-4-6","max_tokens":1000,` +
		`"system":[{"type":"text","text":"` + harness + pad(10_000) + `","cache_control":{"type":"ephemeral","ttl":"1h"}}],` +
		`"messages":[` + strings.Join(msgs, ",") + `]}`)
}

func priced(provider, model string) (cachecost.Prices, bool) {
	p, ok := pricing.Default().Lookup("anthropic", model)
	return cachecost.PricesOf(p), ok
}

// Issue 21: routing by expected bill. A turn of a conversation whose
// prompt the sync cache holds stays sync, whatever its budget allows: a
// batch would mostly write the prefix again; so does a new conversation
// whose harness's system prompt the sync cache holds. A new
// conversation's turn with nothing cached is batched at half price.
// Cache-blind routing batches them all.
func TestRoutingByCacheState(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.turnaround = func(string) time.Duration { return time.Minute }
		d := &Dispatcher{Providers: []llmfleet.Provider{f}, Prices: priced, Policy: Policy{TurnaroundPrior: time.Minute}}
		if err := d.Open(); err != nil {
			t.Fatal(err)
		}
		defer d.Close(t.Context())
		blind := open(t, f, Policy{TurnaroundPrior: time.Minute, CacheBlind: true})
		cred := llmfleet.Credential{APIKey: "k"}
		warm := &llmfleet.Request{Credential: cred, Body: agentTurn("h1", "warm", 1)}
		// Turn 0 went sync: the sync cache holds its prompt.
		first := &llmfleet.Request{Credential: cred, Body: agentTurn("h1", "warm", 0)}
		u := llmfleet.Usage{InputTokens: 10, CacheCreationInputTokens: 11_500, OutputTokens: 800}
		u.CacheCreation.Ephemeral1hInputTokens, u.CacheCreation.Ephemeral5mInputTokens = 10_000, 1_500
		d.ObserveCache(first, llmfleet.RouteSync, u, time.Now())
		cold := &llmfleet.Request{Credential: cred, Body: agentTurn("h2", "cold", 1)}
		// A new conversation of the same harness: its system prompt is
		// warm in the sync cache, which batching would mostly write again.
		sibling := &llmfleet.Request{Credential: cred, Body: agentTurn("h1", "sibling", 1)}
		for _, tc := range []struct {
			name string
			d    *Dispatcher
			req  *llmfleet.Request
			want llmfleet.Route
		}{
			{"warm in the sync cache", d, warm, llmfleet.RouteSync},
			{"new conversation of a new harness", d, cold, llmfleet.RouteBatch},
			{"new conversation of a warm harness", d, sibling, llmfleet.RouteSync},
			{"warm, cache-blind", blind, warm, llmfleet.RouteBatch},
		} {
			if got := tc.d.Plan(time.Hour, tc.req); got != tc.want {
				t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
			}
		}
	})
}

// Requests that share a prompt prefix (a harness's system prompt) pool
// together: a batch holds one harness's turns, whose items read what the
// first wrote, while another harness's go in a batch of their own.
func TestBatchesGroupedByPrefix(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		d := open(t, f, Policy{BatchMinSize: 2})
		cred := llmfleet.Credential{APIKey: "k"}
		var wg sync.WaitGroup
		for i, h := range []string{"hA", "hB", "hA", "hB"} {
			wg.Go(func() {
				r := &llmfleet.Request{Credential: cred, Body: agentTurn(h, fmt.Sprint("c", i), 0)}
				if _, err := d.SubmitBatch(t.Context(), 0, r); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		f.mu.Lock()
		defer f.mu.Unlock()
		if len(f.order) != 2 {
			t.Fatalf("%d batches, want 2", len(f.order))
		}
		for _, id := range f.order {
			items := f.batches[id].items
			if len(items) != 2 || strings.Contains(string(items[0].Params), `"text":"hA`) != strings.Contains(string(items[1].Params), `"text":"hA`) {
				t.Fatalf("batch %s mixes prefixes", id)
			}
		}
	})
}
