// Package cachecost is llmfleet's cost model: what a request is expected
// to cost on each route it could take, with its prompt cache in mind. It
// is pure: no clock (every time is passed in), no I/O, no state; the
// engine (package dispatch) feeds it what it learned (Book) and routes by
// its answer.
//
// A cached prefix is read at a tenth of the input price (per model: Opus
// 5.5 reads at 0.05×) and written at 1.25× (5-minute TTL) or 2× (1-hour);
// the batch and flex discounts halve all of them. A sync call finds what
// sync calls wrote within their TTL (nearly always); a batch item finds
// what batch items wrote only at best (30% to 98% of the time, by the
// vendor's docs), and the two caches barely see each other's entries. So
// the cheapest route for an agent's turn is a question of its cache state
// as much as of its discount: a warm turn read from the sync cache costs
// far less than the same turn batched and written again at half price.
//
// Model.Cost answers, for one request and one way of sending it (an
// Option: a route, at a time its prompt reaches the provider's cache,
// with a probability of being rescued), the expected bill: over the
// breakpoints of its prompt from the longest, the probability that the
// lookup hits there (its entry alive in the lookup's own cache at the
// Rates' own-cache rate, or only in the other cache at the cross rate),
// the reads, writes (at the TTLs' prices) and uncached input that follow,
// its output, all at the route's price, and, for a batch, the expected
// rescue: a sync call paid on top with its late probability.
package cachecost
