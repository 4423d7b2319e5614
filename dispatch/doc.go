// Package dispatch is llmfleet's engine: a Dispatcher that routes each
// request by its latency budget either to the provider's synchronous
// endpoint or into a pool that goes out as one provider batch job.
//
// # Routing
//
// A budget at or under Policy.SyncMaxLatency goes sync. A larger budget is
// batched only if it covers the expected time in the pool: the time until
// its pool is flushed plus the predicted batch turnaround for its provider
// and model plus a delivery slack of two poll intervals. Because a request
// may pull its pool's flush forward (see Flushing), the time until its flush
// can always be made zero, so the test reduces to
// budget >= predicted turnaround + slack. The prediction starts from
// Policy.TurnaroundPrior and is learned from the turnarounds the dispatcher
// observes (ended_at - created_at as the provider reports them), per
// provider and model, as a high quantile (Policy.TurnaroundQuantile) of the
// recent ones. A request without a budget (0) is batched: the library is
// for patient work.
//
// # Flushing
//
// Requests are pooled per provider, per credential and per set of
// pass-through headers (anthropic-beta, anthropic-version): requests sent
// with different API keys never share a batch. A pool goes out when it
// reaches Policy.BatchMinSize, when it reaches the batch size or byte cap
// (Policy.BatchMaxSize, and the provider's own limits), when its oldest
// request has waited Policy.BatchWindow, or earlier when waiting longer
// would break the tightest budget in it (its deadline minus the predicted
// turnaround and slack). Each pool has one timer set to its next flush; no
// polling tick. Any number of batches may be in flight at once.
//
// # Polling
//
// The in-flight batches of one provider and credential are tracked
// together: one timer per credential fires when the first of them is due,
// and one call answers for all of them (a retrieve when one batch is in
// flight, the list endpoint when several are); a status call that gets no
// answer within a minute is abandoned and tried again at the next check.
// A batch is polled rarely
// while it is young and more often near its predicted end: the next check
// is half the time left until the predicted end; after the predicted end,
// a quarter of the overrun. Both are clamped between Policy.PollInterval
// and the larger of Policy.MaxPollInterval and a tenth of the batch's
// expected (or, once late, actual) age. TestPollingCost records what that
// costs: a batch that ends near its prediction costs about 7 management
// calls in all (create, polls, results) and reaches its callers within one
// poll interval of its end; a 6-hour batch costs about 21 calls once its
// turnaround has been learned, and 68 while the 120s prior still stands.
//
// # Results
//
// Results are matched by custom_id. A succeeded result answers its caller
// with the Message; an errored one with an *llmfleet.Error carrying the
// provider's error type, message and the status the sync API would have
// used; canceled and expired ones with llmfleet.ErrBatchCanceled and
// llmfleet.ErrBatchExpired; all three wrapped in an *llmfleet.BatchError
// naming the batch. A create the provider refused (an error answer) fails
// every request of that batch with the cause. A create that failed without
// an answer (a dropped connection, a timeout) may have made the batch, so
// it is never simply sent again: the credential's batch list is read, a
// batch that matches it is adopted, and only a list that shows none sends
// the requests again; if the list cannot be read after several tries, the
// callers get the error and, with a Store, the intent stays recorded for the
// next start to reconcile. Results that stay unreadable for several polls in
// a row answer the batch's requests with llmfleet.ErrResultMissing, so
// nothing waits forever. A request whose budget runs out before its answer
// fails with llmfleet.ErrBudgetExceeded. A caller whose context ends while
// its request is still pooled leaves the pool; after submission its result
// is dropped when it arrives and counted in Stats.DroppedResults.
package dispatch
