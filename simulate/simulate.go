// Package simulate runs the dispatcher (the real engine: policy, pools,
// tracker, rescue) on a virtual clock against a simulated provider, to
// tell what a workload would have cost, and which budgets would have
// broken, under a policy, before it is deployed.
//
// The engine runs unchanged: its Clock is a virtual Clock, its goroutines
// are started through the Clock (Dispatcher.Go), its waits go through the
// Clock (llmfleet.Sleeper), and the simulated agents submit with
// Dispatcher.SubmitFunc, which does not block. The Clock runs one task at
// a time and moves time to the next timer only when no task runs, so a run
// takes as long as the work it does, not the time it simulates, and the
// same seed gives the same figures.
//
// Turns may carry their prompt's structure (Turn.Prompted; AgentsCached
// generates such a workload): the provider then answers Inspect with the
// prompt's cache breakpoints and computes each answer's usage from its
// prompt cache (package cachesim, the emulator's), and Compare measures
// the policies against sending every turn sync and against the best
// router that knows the cache model (BestCached).
package simulate

import (
	"math/rand/v2"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/cachesim"
	"github.com/llmfleet/llmfleet/dispatch"
	"github.com/llmfleet/llmfleet/emulator"
	"github.com/llmfleet/llmfleet/pricing"
)

// Config is one simulation: a policy, and the provider's behavior.
type Config struct {
	// Name names the policy in the report.
	Name string
	// Policy is the dispatcher's policy.
	Policy dispatch.Policy
	// Turnaround and SyncLatency draw a batch's turnaround and a sync
	// call's latency for a model (nil: see Provider).
	Turnaround, SyncLatency func(model string, r *rand.Rand) time.Duration
	// TurnaroundRange and SyncLatencyRange are, per model, the uniform
	// ranges of the turnarounds and sync latencies (see
	// emulator.ParseRanges): with Turnaround (SyncLatency) nil, the
	// provider draws from them; with neither set, the provider's defaults
	// apply (2m-10m, 1s-3s). The bound (see Bound) is computed from them.
	TurnaroundRange, SyncLatencyRange func(model string) (lo, hi time.Duration)
	// Straggler makes a fraction of the batches slower.
	Straggler Straggler
	// Seed seeds the provider's draws.
	Seed uint64
	// Prices prices the ledger entries; nil means pricing.Default().
	Prices *pricing.Table
	// Provider names the simulated provider, whose prices apply:
	// "anthropic" (empty) or "openai". A model the price table sells in a
	// flex tier may take the flex route (see dispatch.Policy.RouteFlex).
	Provider string
	// FlexLatency draws a flex call's latency for a model; nil draws from
	// FlexLatencyRange, or with neither set from DefaultFlexLatency.
	FlexLatency      func(model string, r *rand.Rand) time.Duration
	FlexLatencyRange func(model string) (lo, hi time.Duration)
	// FlexRefusal is the fraction of flex calls refused for lack of
	// capacity (429, unbilled, at once).
	FlexRefusal float64
	// Cache is the behaviour of the provider's prompt cache, which
	// computes the usage of the turns with a prompt structure
	// (Turn.Prompted); nil means cachesim.Default().
	Cache *cachesim.Config
	// Entries, if not nil, receives each ledger entry of the run (what
	// the report sums), one at a time.
	Entries func(llmfleet.LedgerEntry)
}

// SeedPolicy returns base as the seed policy, the naive router llmfleet
// replaces, expressed as an engine configuration: a budget at or under
// 5s goes sync and any other is batched (the turnaround prior is 1ns and
// never learned, so only a budget under 5s plus the delivery slack of two
// poll intervals also goes sync); one pool per key and model goes out
// every 30s (BatchMinSize is the largest batch, so a pool goes out on its
// window, or earlier when a budget in it could not otherwise be met even
// by an instant batch); no rescue; no flex.
func SeedPolicy(base dispatch.Policy) dispatch.Policy {
	p := base
	p.SyncMaxLatency = 5 * time.Second
	p.TurnaroundPrior = time.Nanosecond
	p.TurnaroundPriors = nil
	p.NoLearning = true
	p.NoRescue = true
	p.BatchWindow = 30 * time.Second
	p.BatchMaxSize = 100_000
	p.BatchMinSize = 100_000
	p.FlexLatencyPrior = 1 << 62 // knows no flex tier: never fits a budget
	return p
}

// drawFrom returns draw, or when it is nil and ranges is not, a draw from
// ranges; nil when both are.
func drawFrom(draw func(string, *rand.Rand) time.Duration, ranges func(string) (time.Duration, time.Duration)) func(string, *rand.Rand) time.Duration {
	if draw != nil || ranges == nil {
		return draw
	}
	return func(model string, r *rand.Rand) time.Duration {
		lo, hi := ranges(model)
		return emulator.DrawUniform(lo, hi, r)
	}
}

// Budget classes of the latency percentiles.
var classes = []struct {
	name string
	max  time.Duration // 0: no limit
}{{"le_5s", 5 * time.Second}, {"le_1m", time.Minute}, {"le_10m", 10 * time.Minute}, {"gt_10m", 0}}

func classOf(budget time.Duration) string {
	for _, c := range classes {
		if c.max == 0 || budget <= c.max {
			return c.name
		}
	}
	return ""
}

// Report is what a simulation found.
type Report struct {
	Policy string `json:"policy"`
	// Requests counts the turns submitted.
	Requests int `json:"requests"`
	// Routes counts the requests by the route they were given: "sync",
	// "flex" (fallbacks to the standard tier included), or "batch"
	// (rescued ones included).
	Routes map[string]int `json:"routes"`
	// Batches counts the batches created; ManagementCalls the batch API
	// calls (creates, polls, result downloads).
	Batches         int64 `json:"batches"`
	ManagementCalls int64 `json:"management_calls"`
	// CostUSD is what the run paid (rescues and answers paid but not
	// delivered included); SyncEquivalentUSD what every request would
	// have paid sync; SavedUSD the difference.
	CostUSD           float64 `json:"cost_usd"`
	SyncEquivalentUSD float64 `json:"sync_equivalent_usd"`
	SavedUSD          float64 `json:"saved_usd"`
	// BoundSavedUSD is what the best router with a sync fallback could
	// expect to save on the workload (see Bound; 0 when it is not known);
	// SavedOfBound is SavedUSD over it (0 when it is 0).
	BoundSavedUSD float64 `json:"bound_saved_usd"`
	SavedOfBound  float64 `json:"saved_of_bound"`
	// ModelSyncUSD is, in BestCached's and OracleCached's reports, what
	// sending every turn sync costs under their model, which their saving
	// is measured against (see Compare).
	ModelSyncUSD float64 `json:"-"`
	// Rescued counts the batched requests answered by their rescue.
	Rescued int `json:"rescued"`
	// FlexFallbacks counts the flex calls that ended in the standard tier
	// (refused until their budget left no room, or the tier refused).
	FlexFallbacks int64 `json:"flex_fallbacks"`
	// BudgetMisses counts the requests answered after their budget, or
	// failed with it.
	BudgetMisses int `json:"budget_misses"`
	// Errors counts the requests answered with an error (budget misses
	// included).
	Errors int `json:"errors"`
	// Latency is the latency from arrival to answer by budget class:
	// le_5s, le_1m, le_10m, gt_10m.
	Latency map[string]Percentiles `json:"latency"`
	// Simulated is the virtual time the run spanned.
	SimulatedMS int64 `json:"simulated_ms"`
	// Cache counts the prompt cache's reads and writes by route ("sync",
	// "flex", "batch"), for a workload with prompt structures (nil
	// otherwise).
	Cache map[string]CacheStats `json:"cache,omitempty"`
}

// CacheStats are the prompt cache's reads and writes on one route.
type CacheStats struct {
	// Answers counts the answers billed on the route; Reads those that
	// read from the cache.
	Answers int `json:"answers"`
	Reads   int `json:"reads"`
	// ReadTokens and WriteTokens are the tokens read from and written to
	// the cache (cache_read_input_tokens, cache_creation_input_tokens).
	ReadTokens  int64 `json:"read_tokens"`
	WriteTokens int64 `json:"write_tokens"`
	// HitRate is the share of the cached prefixes' tokens that were read
	// rather than written: ReadTokens / (ReadTokens + WriteTokens).
	HitRate float64 `json:"hit_rate"`
}

// add counts one answer's usage.
func (c *CacheStats) add(u llmfleet.Usage) {
	c.Answers++
	if u.CacheReadInputTokens > 0 {
		c.Reads++
	}
	c.ReadTokens += u.CacheReadInputTokens
	c.WriteTokens += u.CacheCreationInputTokens
	if all := c.ReadTokens + c.WriteTokens; all > 0 {
		c.HitRate = float64(c.ReadTokens) / float64(all)
	}
}

// Percentiles are latency percentiles, in milliseconds.
type Percentiles struct {
	Count int   `json:"count"`
	P50   int64 `json:"p50_ms"`
	P90   int64 `json:"p90_ms"`
	P99   int64 `json:"p99_ms"`
	Max   int64 `json:"max_ms"`
}

// start is the virtual time a simulation starts at.
var start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
