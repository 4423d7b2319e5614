// Package dispatch is llmfleet's engine: a Dispatcher that routes each
// request by its latency budget to the provider's synchronous endpoint, to
// its flex tier (a synchronous call at batch prices, for the models that
// have one), or into a pool that goes out as one provider batch job, and
// answers the caller exactly as the synchronous API would.
//
// # Shape
//
// The Dispatcher is a façade over parts with one job each. On the
// request side:
//
//   - acceptor: takes a batched request in (its waiter), makes it durable
//     within its budget, then pools it or sends it sync at once; answers
//     a caller that stops waiting.
//   - requestIDs: the requests waiting here by id, and the callers that
//     attach to one by giving its id again.
//   - rescuer: the rescue timers, and the sync call of a batched request
//     late for its deadline.
//   - syncCaller: the calls sent synchronously (the sync route, rescues,
//     sending at once), their bounds, and the sync route's ledger entry.
//   - answerer: stores answers with their ledger entries, then answers
//     their callers; holds an answer the store cannot take yet and
//     retries its storing.
//   - paidLedger: the ledger entries of calls paid apart from their
//     answer, kept in memory until the store takes them.
//   - workGroup: the work under way that Close waits for, and the
//     dispatcher's goroutines (through the Go hook).
//   - engineLock: the lock over pools, trackers and waiters; what calls
//     out (Observe, answers, followers' replies) is queued while it is
//     held and made once it is released.
//
// On the batch side:
//
//   - Policy: the pure rules (Route, FlushAt, NextCheck, Settled,
//     RetryAfter). It reads no clock and does no I/O.
//   - pool: the queued requests that may share a batch (same provider,
//     credential, model and provider pool key), oldest accepted first, with
//     their bytes.
//   - tracker: the batches in flight of one provider and credential, and
//     their poll schedule (one timer).
//   - the reconciler (reconcile): the one place that decides what became of
//     a create that may or may not have made its batch.
//   - journal: the money path's records; Store-backed, or a no-op when the
//     Dispatcher has no Store.
//   - waiter: one request, moving queued → submitting → (reconciling →)
//     in flight → done, or back to queued when its batch is proven never
//     made (the moves in waiter.go). Every move is checked: one the
//     state machine refuses is a bug, which panics in a test binary and
//     is logged in a server (see badMove).
//
// All time comes from the injected Clock (timers, the create and poll
// deadlines), so the same engine runs under a virtual clock: a Clock that
// implements llmfleet.Sleeper takes the engine's waits, the Go hook starts
// its goroutines (so that a simulator knows when none runs), and
// SubmitFunc submits without blocking (package simulate drives the engine
// so).
//
// # Routing
//
// A request without a budget takes Policy.DefaultBudget (default 0: sync,
// so nothing is made slow unless asked). A budget at or under
// Policy.SyncMaxLatency goes sync. A larger one is routed by expected
// cost, with its deadline rescue in mind: a batched request whose answer
// is not in by its deadline less its model's sync latency (learned, 95th
// percentile) and Policy.RescueMargin is sent sync as well, and the first
// answer wins. A batch that comes too late then costs its price and a sync
// call, so batching pays when the batch comes in time with a probability
// above Policy.BatchPrice (0.5): the request is batched when that quantile
// of its model's turnarounds, plus a delivery slack of two poll intervals,
// fits its budget less the rescue's reserve. (Without rescue,
// Policy.NoRescue, the Policy.TurnaroundQuantile must fit.) A model with
// no observed turnaround yet sends one request at a time to batch, when
// its budget leaves room for a rescue, to learn from. Budgets count from
// the request's arrival, on every route. A budget routes; it does not
// cut a call already sent, which the provider bills whether or not its
// answer is waited for: a sync or flex call still unanswered when its
// budget runs out is answered late (its ledger entry's BudgetMet false, a
// budget miss). Policy.HardDeadline makes the budget a deadline instead:
// such a call is cut then, with llmfleet.ErrBudgetExceeded, and its
// ledger entry carries an estimate of its usage (LedgerEntry.Estimated).
// Policy.UpstreamTimeout (10 minutes) bounds every call the dispatcher
// sends synchronously, whatever its budget (llmfleet.ErrUpstreamTimeout),
// unless its provider states a longer one for the call's tier
// (llmfleet.TierTimeouts: Gemini's flex tier, served within 15 minutes).
//
// A model with a flex tier (Dispatcher.Flex, the price table's word, less
// the models the provider refused the tier for) goes flex
// (Policy.RouteFlex) when its budget is over SyncMaxLatency and covers
// flex's learned latency (95th percentile, Policy.FlexLatencyPrior before
// any) and a standard call after it: flex costs what a batch costs and
// answers in seconds, so it takes every request it fits, batchable ones
// included, unless the model's recent flex calls were refused for
// capacity more often than Policy.FlexMaxRefusal (a refused call ends at
// the standard price, a batch keeps its discount unless late) or
// Policy.PreferBatch is set. A flex call refused for capacity is retried
// after a doubling wait while the budget leaves room for the wait and a
// standard call, then sent standard; one refused because the model has no
// flex tier goes standard at once, and the model is not routed flex again.
// Its ledger entry is route flex, priced at the tier the provider says it
// served.
//
// A request whose prompt carries cache breakpoints (Anthropic
// cache_control), with Dispatcher.Prices set and Policy.CacheBlind off,
// is then routed by the cost model (package cachecost): of the routes its
// budget allows, the one of least expected bill, this turn's and that of
// the conversation's turns to come from the cache state it leaves (a
// turn sent sync leaves its prompt in the sync cache, a batched one in
// the batch cache, and the next turn reads it there or writes it again),
// never one expected to cost more than sync this turn, the conversation
// kept on its cache unless the other is clearly cheaper. The cost model
// reads what the Dispatcher learned of prompt caching from every answer's
// usage (prefix sizes, entries and their expiry, hit rates of each cache,
// per provider, model and credential; stored and shared by replicas):
// a rate starts from what the provider's other models and credentials
// show, the batch cache's from Policy.CacheBatchRate before any, and is
// measured as turns are batched (Policy.CacheTrials lets routing batch a
// few to measure it). Requests that share their prompt's first
// breakpoint pool together. A batched request has its cache TTLs raised
// to an hour where the cost model finds it cheaper over the turn and the
// turns to come (Policy.NoTTLUpgrade turns it off; its ledger entry
// names the rewrite). The ledger's "would have paid" of a discounted
// request is the sync route's expected bill with the sync cache's state
// (LedgerEntry.SyncUSD), and MissUSD what its route's cache writes cost.
//
// Turnarounds are learned per provider and model
// from every batch (ended_at - created_at), stored, and restored at start;
// a model starts from its prior (Policy.TurnaroundPrior, or
// Policy.TurnaroundPriors for that model). SubmitBatch batches whatever
// the budget; 0 there means no budget.
//
// # Rescue
//
// The first answer of a rescued request (the batch's or the sync call's)
// is delivered and stored with its ledger entry (Rescue "sync" when the
// sync call won); the other, when it comes, is recorded in the ledger as
// paid and not delivered (Rescue "late"). Which came first is the store's
// word (CompleteRequests reports whether a completion was kept): a
// completion not kept is late if it was paid apart from the stored answer,
// and no answer at all if it is the same batch's result delivered again
// (by the replica that created the batch and by one that adopted it). A
// request rescued while still in its pool leaves it. A request whose
// budget cannot hold a batch with its rescue (Policy.Batchable) is not
// batched, whatever asked for it (a ticket, a forced batch): it is sent
// sync at once, stored (with a Store) as submitted without a batch, so
// that no pool takes it; one a restart finds so is answered with an
// interruption, not sent again. The caller of a batched request is
// answered at its deadline (llmfleet.ErrBudgetExceeded) if no answer came
// by then, but its sync call (a rescue's, or one sent at once) is not cut
// there: its answer, when it comes, is stored and recorded. Under
// Policy.HardDeadline that call is cut at the deadline, and a cut
// rescue's call is recorded as paid and not delivered, its usage
// estimated.
//
// # Flushing
//
// Requests are pooled per provider, credential, model and the provider's
// pool key (for Anthropic the anthropic-* headers): requests sent with
// different API keys never share a batch, and a batch's turnaround teaches
// only the model it held. A pool goes out when it reaches
// Policy.BatchMinSize, when it reaches the batch size or byte cap, when its
// oldest request has waited Policy.BatchWindow since it was durably
// accepted (so a slow store does not split requests that arrived
// together), or earlier when waiting longer would leave the tightest
// budget in it less than its rescue's reserve, the predicted turnaround and
// the slack. Each pool has one timer set to its next flush.
//
// # The money path
//
// A request is stored before it is acknowledged; a batch's intent (its
// local id, which is its tag, and the create call's deadline) before its
// create is sent. The provider records the tag (Anthropic: the prefix of
// every custom_id), so that FindBatch can find the batch. A create that
// fails is classified by the provider: refused (an error answer) or never
// delivered (connection refused) fails its requests at once; uncertain (no
// answer after the request was written, or a 5xx) goes to the reconciler,
// which looks for the batch by its tag until it finds it (and adopts it)
// or a list read after the create could no longer land (the create's
// answer, or its deadline when none came, plus Policy.SettleDelay) shows
// none (and sends the requests again). A failed list, or candidates that
// cannot be told apart yet, prove nothing. A restart hands every stored
// intent to the same reconciler.
//
// The store's write of an accepted request is bounded by its budget: a
// caller waiting for its answer whose request the store has not taken by
// its rescue time gets it sync (the write is canceled; should it land
// all the same, the request is completed with the sync answer, never
// batched), and a ticket not stored by its deadline fails at once with
// llmfleet.ErrStore.
//
// A result is stored, with its ledger entry, in one transaction before its
// caller is answered, so each request has one ledger entry, which survives
// a crash. An answer the store cannot take now (a full disk) is held, not
// thrown away: its storing is tried again until the store takes it, and
// its caller is answered from it when its budget needs it (an answer of
// the sync route at once, a batch's result at the request's rescue time)
// rather than pay for the request again; a batch's results read once are
// not read again. Ledger entries that complete no request (late answers)
// are likewise kept and written once the store takes them. Results are matched by custom_id; an errored one becomes the
// provider's *llmfleet.Error, a canceled or expired one
// llmfleet.ErrBatchCanceled or ErrBatchExpired, all wrapped in a
// *llmfleet.BatchError naming the batch.
//
// Nothing waits forever: results that stay unreadable answer with
// ErrResultMissing; a batch the provider refuses to show (404, 401, 403)
// several times in a row answers with that error; one that cannot be
// looked at at all is given up well past its expiry.
//
// # A fleet of replicas
//
// With a Store several processes share (llmfleet.SharedStore, such as
// PostgreSQL), each Dispatcher is one replica of a fleet: it pools what
// it accepts as above, but a due pool is claimed in the store, taking
// every replica's queued requests of that pool accepted by then (so
// requests accepted anywhere share batches); its own requests that
// another replica claimed wait there, answered when the store announces
// their results (SharedStore.Watch) or a look every third of
// Dispatcher.Lease finds them. The replica renews its lease every third
// of Lease and adopts the batches and queued requests of replicas whose
// lease ended, picking them up as a restart does (intents through the
// reconciler). It relearns the fleet's turnarounds from the store as
// often. A rescue made by one replica for a request another batched is
// settled by the store (the first answer stored is kept) and the second
// paid answer is recorded as late where it came.
//
// A replica holds its lease, as far as it knows, until the time it last
// renewed it plus Lease; past that (it was paused, or cut off), a rescue
// waits for the renewal, made at once, and looks in the store before it
// pays. A renewal that finds the lease ended (SharedStore.Heartbeat held
// false) makes the replica give up what it held in memory (its batches in
// flight and its pools: the others may have adopted them) and go on as a
// new owner, adopting back what nobody took. A create not sent by its
// deadline is never sent (a replica that adopted its intent may conclude
// from then on that it was not made).
//
// # Polling
//
// The batches of one provider and credential are looked at together every
// Policy.PollInterval, with one call (a retrieve when one batch is in
// flight, the list endpoint when several are), so that a result reaches
// its caller within one poll interval of its batch's end whatever the
// prediction said: one call per credential per interval, 12 a minute at
// the default 5s, under the Anthropic tier 1 limit of 50 a minute.
// TestPollingCost records what that costs. A batch whose provider asked
// for a wait (Batch.PollAfter: Anthropic's Retry-After: 10 on a running
// batch) is not called for until the wait is over (up to
// Policy.MaxPollInterval), while the others keep their interval; a
// listing made for them that shows it ended is taken (TestPollHintPerBatch).
// Dispatcher.PollNow has a batch looked at on its tracker's next turn,
// wait or not (an OpenAI webhook said it ended).
package dispatch
