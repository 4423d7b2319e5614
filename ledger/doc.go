// Package ledger builds and aggregates llmfleet's cost ledger.
//
// Every answered (or failed) request leaves one llmfleet.LedgerEntry: its
// route, usage, cost at that route and what the other route would have
// cost. Call.Entry builds an entry from what Submit returned and Make prices
// it through a PriceFunc hook (such as the Cost method of a pricing table).
//
// Summarize and Totals aggregate entries into the Summary served as JSON at
// GET /llmfleet/v1/stats: calls by route, what was paid, what the same
// traffic would have cost at the sync route, what was saved, budget misses,
// and breakdowns by model and by route; and the prompt cache's truth: the
// cache hit rates by route and model, what the cache writes that routing
// caused cost (routing misses), and the saving net of them (see
// Summary.NetSavedUSD and MissNotInSaving). WriteTable renders a Summary
// for the terminal.
//
// ParsePeriod reads the period options shared by "llmfleet stats" and the
// stats endpoint (?since=, ?from=, ?to=), and SummarizePeriod summarizes a
// period of the ledger read from a store. Writer records entries in a
// store from a goroutine of its own, coalescing those that arrive during a
// write into one store call and holding back its callers, never dropping
// an entry, when the store falls behind.
package ledger
