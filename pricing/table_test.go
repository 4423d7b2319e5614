package pricing

import (
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/llmfleet/llmfleet"
)

// usage builds a Usage; w5m and w1h go into the cache_creation split and
// its total.
func usage(in, out, w5m, w1h, read int64) llmfleet.Usage {
	var u llmfleet.Usage
	u.InputTokens, u.OutputTokens, u.CacheReadInputTokens = in, out, read
	u.CacheCreation.Ephemeral5mInputTokens, u.CacheCreation.Ephemeral1hInputTokens = w5m, w1h
	u.CacheCreationInputTokens = w5m + w1h
	return u
}

func TestLookupMatching(t *testing.T) {
	tab := Default()
	for _, c := range []struct {
		provider, model string
		input           float64 // 0: not priced
	}{
		{"anthropic", "claude-sonnet-4-6", 3},
		{"anthropic", "claude-haiku-4-5-20251001", 1},
		{"anthropic", "claude-haiku-4-5", 1},           // alias
		{"anthropic", "claude-sonnet-4-5", 3},          // alias of a dated id
		{"anthropic", "claude-sonnet-4-6-20260217", 3}, // dated suffix dropped
		{"anthropic", "claude-sonnet-4-5-20991231", 3}, // dropped, then alias
		{"anthropic", "claude-opus-4-5@20251101", 5},   // Vertex AI form
		{"anthropic", "claude-opus-4-0", 15},           // alias
		{"anthropic", "claude-opus-4-1", 15},           // alias
		{"anthropic", "claude-opus-4-8", 5},            //
		{"anthropic", "claude-3-5-haiku-latest", 0.8},  // alias
		{"", "claude-haiku-4-5", 1},                    // default provider
		{"openai", "gpt-4o-2024-08-06", 2.5},           // OpenAI date form
		{"openai", "gpt-4o-2024-05-13", 5},             // exact id wins
		{"anthropic", "claude-opus-5-5", 4},            //
		{"anthropic", "claude-opus-5", 5},              //
		{"anthropic", "claude-mythos-5", 0},            // price unknown
		{"anthropic", "claude-sonnet-4-6x", 0},         //
		{"anthropic", "20251001", 0},                   //
		{"anthropic", "gpt-4o", 0},                     // other provider's model
		{"bedrock", "claude-sonnet-4-6", 0},            // unknown provider
		{"anthropic", "claude-sonnet-4-6-2025100", 0},  // not a date
		{"anthropic", "claude-haiku-4-5-20251001-x", 0},
	} {
		p, ok := tab.Lookup(c.provider, c.model)
		if ok != (c.input != 0) || p.Input != c.input {
			t.Errorf("Lookup(%q, %q) = %v, %v; want input %v", c.provider, c.model, p.Input, ok, c.input)
		}
	}
	var nilTable *Table
	if _, ok := nilTable.Lookup("anthropic", "claude-sonnet-4-6"); ok {
		t.Error("nil table priced a model")
	}
	if _, ok := (&Table{}).Cost("anthropic", "claude-sonnet-4-6", usage(1, 1, 0, 0, 0), llmfleet.RouteSync); ok {
		t.Error("zero table priced a model")
	}
}

func TestDerivedCachePrices(t *testing.T) {
	tab := Default()
	for _, c := range []struct {
		model                  string
		in, out, w5, w1h, read float64
	}{
		{"claude-sonnet-4-6", 3, 15, 3.75, 6, 0.3},
		{"claude-opus-4-7", 5, 25, 6.25, 10, 0.5},
		{"claude-opus-4-1", 15, 75, 18.75, 30, 1.5},
		{"claude-haiku-4-5", 1, 5, 1.25, 2, 0.1},
		{"claude-3-5-haiku-20241022", 0.8, 4, 1, 1.6, 0.08},
		{"claude-3-haiku-20240307", 0.25, 1.25, 0.3, 0.5, 0.03}, // explicit figures
	} {
		p, ok := tab.Lookup("anthropic", c.model)
		if !ok {
			t.Fatalf("%s not priced", c.model)
		}
		got := []float64{p.Input, p.Output, p.CacheWrite5m, p.CacheWrite1h, p.CacheRead, p.Batch}
		want := []float64{c.in, c.out, c.w5, c.w1h, c.read, 0.5}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("%s: prices %v, want %v", c.model, got, want)
				break
			}
		}
	}
}

func TestCost(t *testing.T) {
	tab := Default()
	type tc struct {
		name            string
		provider, model string
		u               llmfleet.Usage
		sync, batch     float64 // hand-computed USD
	}
	totalOnly := usage(0, 0, 0, 0, 0)
	totalOnly.CacheCreationInputTokens = 1000 // no split: 5-minute writes
	for _, c := range []tc{
		// 1000×$3 + 500×$15 + 2000×$3.75 + 4000×$6 + 10000×$0.30, per MTok:
		// 3000 + 7500 + 7500 + 24000 + 3000 = 45000 µ$ = $0.045; batch half.
		{"sonnet mixed", "anthropic", "claude-sonnet-4-6", usage(1000, 500, 2000, 4000, 10000), 0.045, 0.0225},
		// Batch stacks with the cache multipliers: 1h write 1.0× base input,
		// 5m write 0.625×, read 0.05×.
		{"sonnet 1h write", "anthropic", "claude-sonnet-4-6", usage(0, 0, 0, 1_000_000, 0), 6, 3},
		{"sonnet 5m write", "anthropic", "claude-sonnet-4-6", usage(0, 0, 1_000_000, 0, 0), 3.75, 1.875},
		{"sonnet read", "anthropic", "claude-sonnet-4-6", usage(0, 0, 0, 0, 1_000_000), 0.3, 0.15},
		{"one 5m token", "anthropic", "claude-sonnet-4-6", usage(0, 0, 1, 0, 0), 3.75e-6, 1.875e-6},
		// 1000 × $1.25 per MTok.
		{"total without split", "anthropic", "claude-haiku-4-5", totalOnly, 0.00125, 0.000625},
		{"opus 4.1", "anthropic", "claude-opus-4-1-20250805", usage(1_000_000, 1_000_000, 0, 0, 0), 90, 45},
		{"opus 4.5 alias", "anthropic", "claude-opus-4-5", usage(2_000_000, 400_000, 0, 0, 0), 20, 10},
		// $0.25 + $1.25 + $0.30 + $0.50 + $0.03.
		{"haiku 3 explicit cache", "anthropic", "claude-3-haiku-20240307", usage(1e6, 1e6, 1e6, 1e6, 1e6), 2.33, 1.165},
		{"haiku 3.5 read", "anthropic", "claude-3-5-haiku-20241022", usage(0, 0, 0, 0, 1e6), 0.08, 0.04},
		// 210,000 input tokens in all: 150000×$6 + 60000×$0.60 + 1000×$22.50
		// = 900000 + 36000 + 22500 µ$.
		{"long context", "anthropic", "claude-sonnet-4-5", usage(150_000, 1000, 0, 0, 60_000), 0.9585, 0.47925},
		// 190,000: standard prices, 150000×$3 + 40000×$0.30 + 1000×$15.
		{"under long context", "anthropic", "claude-sonnet-4-5", usage(150_000, 1000, 0, 0, 40_000), 0.477, 0.2385},
		// Exactly at the threshold is not above it.
		{"at long context", "anthropic", "claude-sonnet-4-20250514", usage(200_000, 0, 0, 0, 0), 0.6, 0.3},
		{"long context cache write", "anthropic", "claude-sonnet-4-5", usage(1, 0, 0, 200_000, 0), 2.400006, 1.200003},
		{"openai cached", "openai", "gpt-4o-mini", usage(1e6, 0, 0, 0, 1e6), 0.225, 0.1125},
		{"sonnet small", "anthropic", "claude-sonnet-4-6", usage(12, 6, 0, 0, 0), 0.000126, 0.000063},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, r := range []struct {
				route llmfleet.Route
				want  float64
			}{{llmfleet.RouteSync, c.sync}, {llmfleet.RouteBatch, c.batch}, {"", c.sync}} {
				got, ok := tab.Cost(c.provider, c.model, c.u, r.route)
				if !ok {
					t.Fatalf("%s not priced", c.model)
				}
				if math.Abs(got-r.want) > 1e-12 || fmt.Sprintf("%.2f", got) != fmt.Sprintf("%.2f", r.want) {
					t.Errorf("%q route: $%.12f, want $%.12f", r.route, got, r.want)
				}
			}
		})
	}
}

func TestCostUnpriced(t *testing.T) {
	usd, ok := Default().Cost("anthropic", "claude-mythos-5", usage(100, 100, 0, 0, 0), llmfleet.RouteBatch)
	if ok || usd != 0 {
		t.Errorf("unknown model: %v, %v; want 0, false", usd, ok)
	}
}

func TestMerge(t *testing.T) {
	tab := Default()
	err := tab.Merge(strings.NewReader(`
anthropic:
  models:
    claude-sonnet-4-6: {input: 4}         # cache prices follow the input price
    claude-haiku-4-5-20251001: {cache-read: 0.05}
    claude-fable-5: {input: 10, output: 50, batch-multiplier: 0.6}
  aliases:
    fable: claude-fable-5
bedrock:
  batch-multiplier: 0.5
  models:
    claude-sonnet-4-6: {input: 3, output: 15}
`))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := tab.Lookup("anthropic", "claude-sonnet-4-6")
	if p.Input != 4 || p.Output != 15 || p.CacheWrite5m != 5 || p.CacheWrite1h != 8 || p.CacheRead != 0.4 || p.Batch != 0.5 {
		t.Errorf("overridden sonnet: %+v", p)
	}
	p, _ = tab.Lookup("anthropic", "claude-haiku-4-5")
	if p.Input != 1 || p.CacheRead != 0.05 || p.CacheWrite1h != 2 {
		t.Errorf("overridden haiku: %+v", p)
	}
	// fable: 1e6 input × $10 × 0.6 = $6.
	if usd, ok := tab.Cost("anthropic", "fable", usage(1e6, 0, 0, 0, 0), llmfleet.RouteBatch); !ok || usd != 6 {
		t.Errorf("added model: %v, %v", usd, ok)
	}
	// A new provider without cache multipliers prices cache tokens as input.
	p, ok := tab.Lookup("bedrock", "claude-sonnet-4-6")
	if !ok || p.CacheWrite5m != 3 || p.CacheRead != 3 || p.Batch != 0.5 {
		t.Errorf("new provider: %+v %v", p, ok)
	}
	// The default table is not shared.
	if p, _ := Default().Lookup("anthropic", "claude-sonnet-4-6"); p.Input != 3 {
		t.Errorf("Default changed: %+v", p)
	}
}

func TestMergeJSON(t *testing.T) {
	tab, err := Parse(strings.NewReader(`{"acme": {"batch-multiplier": 0.5,
		"cache-multipliers": {"write-5m": 1.25, "write-1h": 2, "read": 0.1},
		"models": {"m-1": {"input": 2, "output": 8}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	// 1e6 × ($2 + $8 + $2.50 + $4 + $0.20) / 2.
	if usd, _ := tab.Cost("acme", "m-1", usage(1e6, 1e6, 1e6, 1e6, 1e6), llmfleet.RouteBatch); usd != 8.35 {
		t.Errorf("cost %v, want 8.35", usd)
	}
	if err := tab.Merge(strings.NewReader("")); err != nil {
		t.Errorf("empty document: %v", err)
	}
	if got := tab.Models("acme"); len(got) != 1 || got[0] != "m-1" {
		t.Errorf("Models = %v", got)
	}
}

func TestMergeErrors(t *testing.T) {
	for _, doc := range []string{
		`anthropic: {models: {claude-sonnet-4-6: {inptu: 3}}}`,                 // unknown field
		`anthropic: {models: {claude-sonnet-4-6: {input: -1}}}`,                // negative
		`anthropic: {models: {new-model: {input: 1}}}`,                         // output missing
		`anthropic: {aliases: {x: no-such-model}}`,                             // dangling alias
		`anthropic: {batch-multiplier: .nan}`,                                  // not a number
		`anthropic: {models: {claude-sonnet-4-6: {input: 3e9}}}`,               // implausible
		`anthropic: {models: {claude-sonnet-4-6: {long-context: {input: 6}}}}`, // incomplete
		`anthropic: [1, 2]`, // wrong shape
		`{`,                 // syntax
	} {
		tab := Default()
		if err := tab.Merge(strings.NewReader(doc)); err == nil {
			t.Errorf("Merge(%s) succeeded", doc)
		} else if !strings.HasPrefix(err.Error(), "pricing: ") {
			t.Errorf("Merge(%s): unprefixed error %v", doc, err)
		}
		if p, _ := tab.Lookup("anthropic", "claude-sonnet-4-6"); p.Input != 3 || p.Output != 15 {
			t.Errorf("Merge(%s) failed but changed the table: %+v", doc, p)
		}
	}
}

func TestConcurrentMergeAndCost(t *testing.T) {
	tab := Default()
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for j := range 50 {
				if i == 0 {
					_ = tab.Merge(strings.NewReader(fmt.Sprintf("anthropic: {models: {claude-sonnet-4-6: {output: %d}}}", 15+j%2)))
					continue
				}
				if _, ok := tab.Cost("anthropic", "claude-sonnet-4-6", usage(1, 1, 1, 1, 1), llmfleet.RouteBatch); !ok {
					t.Error("not priced")
				}
			}
		})
	}
	wg.Wait()
}
