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
	"github.com/llmfleet/llmfleet/ledger"
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

// priceDefault prices a ledger entry by the default price table, its
// models Anthropic's (a Dispatcher's Price).
func priceDefault(e llmfleet.LedgerEntry) llmfleet.LedgerEntry {
	return ledger.Make(func(_, m string, u llmfleet.Usage, r llmfleet.Route) (float64, bool) {
		return pricing.Default().Cost("anthropic", m, u, r)
	}, e)
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
		// Batch items read what batch items wrote 90% of the time here.
		d := &Dispatcher{Providers: []llmfleet.Provider{f}, Prices: priced, Policy: Policy{TurnaroundPrior: time.Minute, CacheBatchRate: 0.9}}
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

// Issue 21: a batched turn whose batch waits longer than 5 minutes (a
// slow model) has its cache TTLs raised to an hour when the cost model
// finds the turns to come repay the dearer write (here its prefix is
// warm in the batch cache, so it writes little), named in its ledger
// entry; not with the upgrade turned off, nor when a 5-minute entry
// outlives the batch's wait (a fast model).
func TestTTLUpgradeOfASlowBatch(t *testing.T) {
	for _, tc := range []struct {
		turnaround time.Duration
		off, want  bool
	}{{20 * time.Minute, false, true}, {20 * time.Minute, true, false}, {time.Minute, false, false}} {
		off, turnaround := tc.off, tc.turnaround
		synctest.Test(t, func(t *testing.T) {
			f := newFake()
			f.turnaround = func(string) time.Duration { return turnaround }
			var l ledgerOf
			d := &Dispatcher{Providers: []llmfleet.Provider{f}, Prices: priced, Observe: l.observe,
				Policy: Policy{BatchMinSize: 1, TurnaroundPrior: turnaround, NoTTLUpgrade: off, CacheBatchRate: 0.9}}
			if err := d.Open(); err != nil {
				t.Fatal(err)
			}
			defer d.Close(t.Context())
			cred := llmfleet.Credential{APIKey: "k"}
			// Its first turn was batched: the batch cache holds it.
			u := llmfleet.Usage{InputTokens: 10, CacheCreationInputTokens: 11_500, OutputTokens: 800}
			u.CacheCreation.Ephemeral1hInputTokens, u.CacheCreation.Ephemeral5mInputTokens = 10_000, 1_500
			d.ObserveCache(&llmfleet.Request{Credential: cred, Body: agentTurn("h1", "slow", 0)}, llmfleet.RouteBatch, u, time.Now())
			if _, err := d.SubmitBatch(t.Context(), 0, &llmfleet.Request{Credential: cred, Body: agentTurn("h1", "slow", 1)}); err != nil {
				t.Fatal(err)
			}
			f.mu.Lock()
			params := string(f.batches[f.order[0]].items[0].Params)
			f.mu.Unlock()
			es := l.all()
			upgraded := !strings.Contains(params, `{"type":"ephemeral"}`) && strings.Count(params, `"ttl":"1h"`) == 2
			switch {
			case len(es) != 1:
				t.Fatalf("entries %+v", es)
			case tc.want && (!upgraded || es[0].Rewrite != llmfleet.RewriteTTL1h):
				t.Errorf("%+v: rewrite %q, params upgraded %v, want upgraded", tc, es[0].Rewrite, upgraded)
			case !tc.want && (upgraded || es[0].Rewrite != ""):
				t.Errorf("%+v: rewrite %q, params upgraded %v, want as sent", tc, es[0].Rewrite, upgraded)
			}
		})
	}
}

// Issue 21: what a batched request "would have paid" is the sync route's
// bill with the sync route's cache state. A forced batch of a turn whose
// prefix the sync cache holds misses in the batch cache and writes it
// again; sync would have read it: the entry's OtherRouteUSD is the bill
// of that read, not its own writes priced at sync rates (which would show
// a saving that was never made), and its MissUSD is the writes its route
// caused.
func TestWouldHavePaidIsSyncsCacheState(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.turnaround = func(string) time.Duration { return time.Minute }
		f.usage = func(bool) llmfleet.Usage { // the batch writes the prefix again
			u := llmfleet.Usage{InputTokens: 10, CacheCreationInputTokens: 16_000, OutputTokens: 800}
			u.CacheCreation.Ephemeral1hInputTokens, u.CacheCreation.Ephemeral5mInputTokens = 10_000, 6_000
			return u
		}
		var l ledgerOf
		d := &Dispatcher{Providers: []llmfleet.Provider{f}, Prices: priced, Observe: l.observe, Price: priceDefault,
			Policy: Policy{BatchMinSize: 1, TurnaroundPrior: time.Minute}}
		if err := d.Open(); err != nil {
			t.Fatal(err)
		}
		defer d.Close(t.Context())
		cred := llmfleet.Credential{APIKey: "k"}
		u := llmfleet.Usage{InputTokens: 10, CacheCreationInputTokens: 11_500, OutputTokens: 800}
		u.CacheCreation.Ephemeral1hInputTokens, u.CacheCreation.Ephemeral5mInputTokens = 10_000, 1_500
		d.ObserveCache(&llmfleet.Request{Credential: cred, Body: agentTurn("h1", "c", 0)}, llmfleet.RouteSync, u, time.Now())
		if _, err := d.SubmitBatch(t.Context(), 0, &llmfleet.Request{Credential: cred, Body: agentTurn("h1", "c", 1)}); err != nil {
			t.Fatal(err)
		}
		es := l.all()
		if len(es) != 1 {
			t.Fatalf("entries %+v", es)
		}
		e, prices := es[0], pricing.Default()
		ownAtSync, _ := prices.Cost("anthropic", "claude-sonnet-4-6", e.Usage, llmfleet.RouteSync)
		p, _ := prices.Lookup("anthropic", "claude-sonnet-4-6")
		// Sync: 11.5k read (what turn 0 wrote), 4.5k written (5m), 10 in, 800 out.
		want := (11_500*p.CacheRead + 4_500*p.CacheWrite5m + 10*p.Input + 800*p.Output) / 1e6
		if !near(e.OtherRouteUSD, want) || e.OtherRouteUSD >= ownAtSync {
			t.Errorf("would have paid $%.6f, want $%.6f (its own usage at sync prices: $%.6f)", e.OtherRouteUSD, want, ownAtSync)
		}
		if wantMiss := 11_500 * (p.CacheWrite1h*10_000/11_500 + p.CacheWrite5m*1_500/11_500 - p.CacheRead) / 1e6 * 0.5; e.MissUSD <= 0 || e.MissUSD > wantMiss*1.5 {
			t.Errorf("miss $%.6f, want about $%.6f", e.MissUSD, wantMiss)
		}
	})
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }
