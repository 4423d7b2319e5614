package ledger

import (
	"maps"
	"slices"
	"time"

	"github.com/llmfleet/llmfleet"
)

// Tokens counts tokens by kind. The kinds are those of the
// llmfleet_tokens_total metric.
type Tokens struct {
	Input        int64 `json:"input"`
	Output       int64 `json:"output"`
	CacheWrite5m int64 `json:"cache_write_5m"`
	CacheWrite1h int64 `json:"cache_write_1h"`
	CacheRead    int64 `json:"cache_read"`
}

// TokensOf returns the tokens of a usage; cache writes are split by TTL as
// llmfleet.Usage.CacheWrites does.
func TokensOf(u llmfleet.Usage) Tokens {
	w5m, w1h := u.CacheWrites()
	return Tokens{Input: u.InputTokens, Output: u.OutputTokens, CacheWrite5m: w5m, CacheWrite1h: w1h, CacheRead: u.CacheReadInputTokens}
}

// Total returns the number of tokens of every kind.
func (t Tokens) Total() int64 {
	return t.Input + t.Output + t.CacheWrite5m + t.CacheWrite1h + t.CacheRead
}

func (t *Tokens) add(o Tokens) {
	t.Input += o.Input
	t.Output += o.Output
	t.CacheWrite5m += o.CacheWrite5m
	t.CacheWrite1h += o.CacheWrite1h
	t.CacheRead += o.CacheRead
}

// Breakdown aggregates the entries of one model or one route.
type Breakdown struct {
	// Calls counts the entries, Errors those whose outcome is not "ok".
	Calls  int64 `json:"calls"`
	Errors int64 `json:"errors"`
	// SyncCalls, FlexCalls and BatchedCalls split Calls by route.
	SyncCalls    int64 `json:"sync_calls"`
	FlexCalls    int64 `json:"flex_calls"`
	BatchedCalls int64 `json:"batched_calls"`
	// Tokens counts their tokens, priced or not.
	Tokens Tokens `json:"tokens"`
	// CostUSD is what was paid; SyncEquivalentUSD what the same requests
	// would have cost at the sync route; SavedUSD the difference.
	CostUSD           float64 `json:"cost_usd"`
	SyncEquivalentUSD float64 `json:"sync_equivalent_usd"`
	SavedUSD          float64 `json:"saved_usd"`
	// BudgetMisses counts the entries that missed their latency budget.
	BudgetMisses int64 `json:"budget_misses"`
	// UnpricedRequests counts the entries of models missing from the price
	// table (and answers whose usage was not read); their cost is unknown
	// and not included above.
	UnpricedRequests int64 `json:"unpriced_requests"`
	// CacheHitRate is the share of the cacheable tokens of Tokens read
	// from the prompt cache (Tokens.CacheHitRate): from 0 to 1, 0 when
	// none was cacheable.
	CacheHitRate float64 `json:"cache_hit_rate"`
	// RoutingMissUSD is what the entries paid for cache writes their
	// route caused (the sum of LedgerEntry.MissUSD): prefixes the other
	// route's cache held, written again.
	RoutingMissUSD float64 `json:"routing_miss_usd"`
	// NetSavedUSD is SavedUSD less the routing misses it does not count
	// already (MissNotInSaving): see Summary.NetSavedUSD.
	NetSavedUSD float64 `json:"net_saved_usd"`

	missNotInSaving float64 // the sum of MissNotInSaving
}

// add counts one entry.
func (b *Breakdown) add(e llmfleet.LedgerEntry, tok Tokens) {
	b.Calls++
	switch e.Route {
	case llmfleet.RouteBatch:
		b.BatchedCalls++
	case llmfleet.RouteFlex:
		b.FlexCalls++
	default:
		b.SyncCalls++
	}
	if e.Outcome != "ok" {
		b.Errors++
	}
	b.Tokens.add(tok)
	b.CacheHitRate = b.Tokens.CacheHitRate()
	b.RoutingMissUSD += e.MissUSD
	if IsBudgetMiss(e) {
		b.BudgetMisses++
	}
	if !e.Priced {
		b.UnpricedRequests++
		return
	}
	b.CostUSD += e.CostUSD
	b.SyncEquivalentUSD += SyncEquivalent(e)
	b.SavedUSD = b.SyncEquivalentUSD - b.CostUSD
	b.missNotInSaving += MissNotInSaving(e)
	b.NetSavedUSD = b.SavedUSD - b.missNotInSaving
}

// Summary is the aggregate of ledger entries served at GET
// /llmfleet/v1/stats.
type Summary struct {
	// From and To bound the entries' times, [From, To), when given.
	From time.Time `json:"from,omitzero"`
	To   time.Time `json:"to,omitzero"`
	// SyncCalls, FlexCalls and BatchedCalls count the entries by route.
	SyncCalls    int64 `json:"sync_calls"`
	FlexCalls    int64 `json:"flex_calls"`
	BatchedCalls int64 `json:"batched_calls"`
	// BatchesSubmitted is the number of batches: Summarize counts the
	// distinct batch ids of its entries; a caller holding the dispatcher's
	// own count (llmfleet.Stats) may set it instead.
	BatchesSubmitted int64 `json:"batches_submitted"`
	// Errors counts the entries whose outcome is not "ok".
	Errors int64 `json:"errors"`
	// CostUSD is what was paid; SyncEquivalentUSD what all the traffic
	// would have cost at the sync route; SavedUSD the difference, and
	// SavedPercent that difference as a percentage of SyncEquivalentUSD.
	CostUSD           float64 `json:"cost_usd"`
	SyncEquivalentUSD float64 `json:"sync_equivalent_usd"`
	SavedUSD          float64 `json:"saved_usd"`
	SavedPercent      float64 `json:"saved_percent"`
	// BudgetMisses counts the entries answered after their latency budget.
	BudgetMisses int64 `json:"budget_misses"`
	// Rescued counts the batched requests answered by a deadline rescue
	// (a sync call made when their batch was late); LateUSD is what the
	// answers that came second cost (paid, not delivered), included in
	// CostUSD.
	Rescued int64   `json:"rescued"`
	LateUSD float64 `json:"late_usd"`
	// UnpricedRequests counts the entries of models missing from the price
	// table (and answers whose usage was not read), UnpricedTokens their
	// tokens; their cost is not included.
	UnpricedRequests int64  `json:"unpriced_requests"`
	UnpricedTokens   Tokens `json:"unpriced_tokens"`
	// Tokens counts all tokens by kind.
	Tokens Tokens `json:"tokens"`
	// CacheHitRate is the share of the cacheable tokens read from the
	// prompt cache, over every entry (Tokens.CacheHitRate: read / (read
	// + written), from 0 to 1; 0 when none was cacheable). The
	// breakdowns have theirs, ByRoute and ByRouteModel the routes'.
	CacheHitRate float64 `json:"cache_hit_rate"`
	// RoutingMissUSD is what every entry (priced or not, discounted or
	// not) paid for cache writes its route caused: the sum of
	// LedgerEntry.MissUSD, a prefix the other route's cache held written
	// again (a batched turn of a conversation warm in the sync cache, a
	// sync turn of one warm in the batch cache). It is included in
	// CostUSD.
	RoutingMissUSD float64 `json:"routing_miss_usd"`
	// NetSavedUSD is SavedUSD less the routing misses of the priced
	// entries that are not discounted (MissNotInSaving): what routing
	// saved once the cache writes it caused on the standard-price routes
	// are paid for. Those of a discounted entry (flex, batch) are not
	// taken off, as its saving is net of them already: its would-have-
	// paid is the sync route's bill with the sync cache's own state, not
	// its own usage at sync prices, so its saving compares what it paid,
	// its misses included, with what sync would have paid. Those of a
	// late rescue answer neither: its whole cost is counted as lost in
	// SavedUSD. NetSavedUSD is below SavedUSD by at most RoutingMissUSD,
	// and may be negative.
	NetSavedUSD float64 `json:"net_saved_usd"`
	// Rewrites counts the entries whose request body llmfleet rewrote,
	// by kind (LedgerEntry.Rewrite: "cache_ttl_1h" for cache TTLs raised
	// to an hour for a batch); empty when none was.
	Rewrites map[string]int64 `json:"rewrites"`
	// Estimated counts the entries whose usage llmfleet estimated
	// (LedgerEntry.Estimated: a call cut before its usage came, which
	// the provider may bill all the same); their tokens and costs are in
	// the figures above.
	Estimated int64 `json:"estimated"`
	// ByModel and ByRoute break the figures down by model and by route
	// (sync, flex, batch); ByProvider by provider; ByTier by the tier the
	// provider served (standard, flex, batch, priority), which costs
	// follow: a flex call served standard is under route flex and tier
	// standard.
	ByModel    map[string]Breakdown `json:"by_model"`
	ByRoute    map[string]Breakdown `json:"by_route"`
	ByProvider map[string]Breakdown `json:"by_provider"`
	ByTier     map[string]Breakdown `json:"by_tier"`
	// ByClient breaks them down by client (LedgerEntry.Client: a key
	// label, or a client's configured name); entries that name none are
	// under NoClient. Its Calls are the client's requests, CostUSD what it
	// paid, SyncEquivalentUSD what it would have paid at the sync route,
	// SavedUSD what batching saved it.
	ByClient map[string]Breakdown `json:"by_client"`
	// ByRouteModel breaks ByRoute down by model: ByRouteModel["batch"]
	// ["claude-sonnet-4-6"] is that model's traffic on the batch route,
	// its cache hit rate and routing misses included.
	ByRouteModel map[string]map[string]Breakdown `json:"by_route_model"`
	// RecentBudgetMisses holds the latest entries that missed their
	// budget, newest first.
	RecentBudgetMisses []llmfleet.LedgerEntry `json:"recent_budget_misses"`
	// Clients are the clients with spend limits or zero data retention
	// configured, with what they paid this UTC day and month, whatever
	// the period (serve's stats only; see Spend.Clients).
	Clients []ClientStatus `json:"clients,omitempty"`

	missNotInSaving float64 // the sum of MissNotInSaving
}

// IsBudgetMiss reports whether an entry had a budget and missed it: it
// was answered after its budget, or timed out at it. An error (a refused
// request, an upstream failure) is an error, not a miss, whenever it came.
func IsBudgetMiss(e llmfleet.LedgerEntry) bool {
	if e.Budget <= 0 || e.BudgetMet {
		return false
	}
	return e.Outcome == "ok" || IsTimeout(e.Outcome)
}

// IsTimeout reports whether an outcome is a request given up at its
// budget (the caller got a 504 timeout_error), rather than answered.
func IsTimeout(outcome string) bool {
	switch outcome {
	case "budget_exceeded", "timeout_error", "deadline_exceeded":
		return true
	}
	return false
}

// MissLabel says what happened to an entry that missed its budget:
// "timed out" for one given up at its budget, "answered late" for one
// answered after it; "" for an entry that is no miss.
func MissLabel(e llmfleet.LedgerEntry) string {
	switch {
	case !IsBudgetMiss(e):
		return ""
	case IsTimeout(e.Outcome):
		return "timed out"
	}
	return "answered late"
}

// SyncEquivalent returns what an entry cost or would have cost at the sync
// route: its OtherRouteUSD when it was served at a discount (Discounted:
// flex or batch), its CostUSD otherwise.
func SyncEquivalent(e llmfleet.LedgerEntry) float64 {
	if e.Rescue == llmfleet.RescueLate {
		return 0 // its request is counted once, by the answer it got
	}
	if e.Discounted() {
		return e.OtherRouteUSD
	}
	return e.CostUSD
}

// NoClient is the ByClient key of the entries that name no client.
const NoClient = "(none)"

// ClientOf returns the ByClient key of an entry.
func ClientOf(e llmfleet.LedgerEntry) string {
	if e.Client == "" {
		return NoClient
	}
	return e.Client
}

// DefaultRecentMisses is how many recent budget misses a Summary keeps by
// default.
const DefaultRecentMisses = 20

// Summarize aggregates the entries whose Time is in [from, to); a zero from
// or to leaves that side open. It keeps the DefaultRecentMisses latest
// budget misses.
func Summarize(entries []llmfleet.LedgerEntry, from, to time.Time) Summary {
	var t Totals
	for _, e := range entries {
		if (!from.IsZero() && e.Time.Before(from)) || (!to.IsZero() && !e.Time.Before(to)) {
			continue
		}
		t.Add(e)
	}
	s := t.Summary()
	s.From, s.To = from, to
	batches := map[string]bool{}
	for _, e := range entries {
		if e.BatchID != "" && (from.IsZero() || !e.Time.Before(from)) && (to.IsZero() || e.Time.Before(to)) {
			batches[e.BatchID] = true
		}
	}
	s.BatchesSubmitted = int64(len(batches))
	return s
}

// clone returns a copy of s that shares no memory with it.
func (s Summary) clone() Summary {
	s.ByModel = maps.Clone(s.ByModel)
	s.ByRoute = maps.Clone(s.ByRoute)
	s.ByProvider = maps.Clone(s.ByProvider)
	s.ByTier = maps.Clone(s.ByTier)
	s.ByClient = maps.Clone(s.ByClient)
	s.ByRouteModel = cloneByRouteModel(s.ByRouteModel)
	s.Rewrites = maps.Clone(s.Rewrites)
	s.RecentBudgetMisses = slices.Clone(s.RecentBudgetMisses)
	return s
}
