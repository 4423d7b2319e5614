package pricing

import (
	"strings"
	"testing"

	"github.com/llmfleet/llmfleet"
)

// Every name of one priced model maps to one canonical name, which prices
// as the name does; a separately priced snapshot and unknown models keep
// their names.
func TestCanonical(t *testing.T) {
	tab := Default()
	for _, c := range []struct{ provider, model, want string }{
		{"anthropic", "claude-haiku-4-5-20251001", "claude-haiku-4-5"}, // as real answers name it
		{"anthropic", "claude-haiku-4-5", "claude-haiku-4-5"},          // as requests name it
		{"", "claude-haiku-4-5-20251001", "claude-haiku-4-5"},          // default provider
		{"anthropic", "claude-sonnet-4-5-20250929", "claude-sonnet-4-5"},
		{"anthropic", "claude-sonnet-4-5-20991231", "claude-sonnet-4-5"}, // unknown date of a known base
		{"anthropic", "claude-opus-4-5@20251101", "claude-opus-4-5"},     // Vertex AI form
		{"anthropic", "claude-opus-4-0", "claude-opus-4"},                // alias of claude-opus-4-20250514
		{"anthropic", "claude-opus-4-20250514", "claude-opus-4"},
		{"anthropic", "claude-3-5-haiku-latest", "claude-3-5-haiku-20241022"}, // no undated name leads there
		{"anthropic", "claude-sonnet-4-6", "claude-sonnet-4-6"},
		{"anthropic", "claude-sonnet-4-6-20260217", "claude-sonnet-4-6"}, // dated form of an undated id
		{"anthropic", "claude-opus-5-5", "claude-opus-5-5"},
		{"openai", "gpt-4o-2024-08-06", "gpt-4o"}, // OpenAI's date form
		{"openai", "gpt-4o", "gpt-4o"},
		{"openai", "gpt-4o-2024-05-13", "gpt-4o-2024-05-13"}, // priced apart: kept apart
		{"openai", "gpt-5-mini-2025-08-07", "gpt-5-mini"},
		{"anthropic", "claude-mythos-5", "claude-mythos-5"},                         // not priced: unchanged
		{"anthropic", "claude-mythos-5-20260101", "claude-mythos-5-20260101"},       // base unknown: unchanged
		{"anthropic", "claude-haiku-4-5-20251001-x", "claude-haiku-4-5-20251001-x"}, //
		{"bedrock", "claude-haiku-4-5-20251001", "claude-haiku-4-5-20251001"},       // unknown provider
	} {
		got := tab.Canonical(c.provider, c.model)
		if got != c.want {
			t.Errorf("Canonical(%q, %q) = %q, want %q", c.provider, c.model, got, c.want)
			continue
		}
		p1, ok1 := tab.Lookup(c.provider, c.model)
		p2, ok2 := tab.Lookup(c.provider, got)
		if ok1 != ok2 || p1.Input != p2.Input || p1.CacheRead != p2.CacheRead {
			t.Errorf("%q prices %v %v, its canonical %q %v %v", c.model, p1, ok1, got, p2, ok2)
		}
	}
	var nilTable *Table
	if got := nilTable.Canonical("anthropic", "claude-haiku-4-5-20251001"); got != "claude-haiku-4-5-20251001" {
		t.Errorf("nil table: %q", got)
	}
	if a := tab.Aliases("anthropic"); a["claude-haiku-4-5"] != "claude-haiku-4-5-20251001" {
		t.Errorf("aliases %v", a)
	}
}

// The current Claude models are priced with their own cache prices: Opus
// 5.5 reads at 0.05x input; Haiku 5.5 costs five times more above 100K
// prompt tokens.
func TestCurrentClaudePrices(t *testing.T) {
	tab := Default()
	for _, c := range []struct {
		model                  string
		in, out, w5, w1h, read float64
	}{
		{"claude-opus-5-5", 4, 20, 5, 8, 0.2},
		{"claude-opus-5", 5, 25, 6.25, 10, 0.5},
		{"claude-sonnet-5", 2, 10, 2.5, 4, 0.2},
		{"claude-sonnet-5-5", 2, 10, 2.5, 4, 0.1},
		{"claude-haiku-5-5", 0.1, 0.5, 0.125, 0.2, 0.01},
		{"claude-fable-5-1", 10, 50, 12.5, 20, 1},
		{"claude-fable-5", 10, 50, 12.5, 20, 1},
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
	// A Claude Code turn on Opus 5.5: 40k cached tokens read, 2k new, 1k
	// out; sync 40000*0.2 + 2000*4 + 1000*20 = $0.036 per 1e6, batch half.
	u := usage(2000, 1000, 0, 0, 40000)
	if usd, _ := tab.Cost("anthropic", "claude-opus-5-5", u, llmfleet.RouteSync); usd != 0.036 {
		t.Errorf("sync %v", usd)
	}
	if usd, _ := tab.Cost("anthropic", "claude-opus-5-5", u, llmfleet.RouteBatch); usd != 0.018 {
		t.Errorf("batch %v", usd)
	}
	// Haiku 5.5 over 100K: 100,001 prompt tokens at the higher band.
	big := usage(1, 0, 0, 0, 100000)
	if usd, _ := tab.Cost("anthropic", "claude-haiku-5-5", big, llmfleet.RouteSync); usd != (0.5+100000*0.05)/1e6 {
		t.Errorf("haiku 5.5 long prompt %v", usd)
	}
}

// A model's cache-multipliers replace its provider's, field by field, and
// merge from an override like every other field.
func TestModelCacheMultipliers(t *testing.T) {
	tab, err := Parse(strings.NewReader(`
p:
  cache-multipliers: {write-5m: 1.25, write-1h: 2, read: 0.1}
  models:
    a: {input: 10, output: 1, cache-multipliers: {read: 0.05}}
    b: {input: 10, output: 1, cache-multipliers: {write-1h: 3}, long-context: {above: 5, input: 20, output: 2}}
`))
	if err != nil {
		t.Fatal(err)
	}
	check := func(model string, w5, w1h, read float64) {
		t.Helper()
		p, _ := tab.Lookup("p", model)
		if p.CacheWrite5m != w5 || p.CacheWrite1h != w1h || p.CacheRead != read {
			t.Errorf("%s: %v %v %v, want %v %v %v", model, p.CacheWrite5m, p.CacheWrite1h, p.CacheRead, w5, w1h, read)
		}
	}
	check("a", 12.5, 20, 0.5)
	check("b", 12.5, 30, 1)
	if p, _ := tab.Lookup("p", "b"); p.LongContext.CacheWrite1h != 60 {
		t.Errorf("long context 1h write %v", p.LongContext.CacheWrite1h)
	}
	if err := tab.Merge(strings.NewReader("p: {models: {a: {cache-multipliers: {write-5m: 2}}}}")); err != nil {
		t.Fatal(err)
	}
	check("a", 20, 20, 0.5)
	if err := tab.Merge(strings.NewReader("p: {models: {a: {cache-multipliers: {read: -1}}}}")); err == nil {
		t.Error("a negative multiplier merged")
	}
	check("a", 20, 20, 0.5)
}
