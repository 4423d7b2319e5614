package llmfleet

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"
)

// ErrNotFound is returned by a Store for a record it does not hold.
var ErrNotFound = errors.New("llmfleet: not found")

// ErrExists is wrapped by the error of a Store's AddRequest for an id it
// holds already: the engine then attaches the call to the request stored
// under that id, rather than look every id up before accepting it.
var ErrExists = errors.New("llmfleet: id exists")

// ErrLocked is returned (wrapped, naming the holder) by a Store that
// another process holds exclusively, such as a SQLite file another
// llmfleet serve has open.
var ErrLocked = errors.New("llmfleet: store in use by another process")

// RequestState is where a durable batched request is in its life.
type RequestState string

// The states of a durable request.
const (
	// RequestQueued: accepted, in a pool, not yet in a batch.
	RequestQueued RequestState = "queued"
	// RequestSubmitted: in a batch whose create call was made or is under
	// way.
	RequestSubmitted RequestState = "submitted"
	// RequestDone: answered; the result is stored.
	RequestDone RequestState = "done"
)

// StoredRequest is a request accepted for batching, as a Store keeps it.
type StoredRequest struct {
	// ID is llmfleet's id of the request ("lfr_..."), given to the caller in
	// the llmfleet-request-id header and used by the async tickets API.
	ID string
	// Provider names the provider.
	Provider string
	// CredentialID is the keyed fingerprint of the request's credential. The
	// secret itself is stored sealed, once, by PutCredential.
	CredentialID string
	// Header holds the pass-through provider headers.
	Header http.Header
	// Endpoint is the provider API path the body is for (Request.Endpoint;
	// empty: the provider's create-message endpoint).
	Endpoint string
	// Body is the raw request body.
	Body json.RawMessage
	// Model is the request's model.
	Model string
	// Pool names the pool it may share a batch with (provider,
	// credential, model and the provider's batch-wide settings), as the
	// engine names it; a SharedStore claims a pool's requests by it.
	Pool string
	// Client names who sent it (Request.Client), so that the ledger
	// entry written when it is answered, even after a restart, names it.
	Client string
	// Budget is the request's latency budget (0: none).
	Budget time.Duration
	// AcceptedAt is when the request was accepted; Deadline is AcceptedAt
	// plus Budget (zero: none).
	AcceptedAt, Deadline time.Time
	// State is where the request is.
	State RequestState
	// BatchID is the local id of the batch it was put in, CustomID its
	// custom_id inside it.
	BatchID, CustomID string
	// Result is its answer once State is RequestDone.
	Result *StoredResult
}

// StoredResult is the answer to a request, typed: the provider's answer
// body on success, or the error the request ended with. The faces (the
// proxy) render it in their provider's own shape, as they render a live
// answer.
type StoredResult struct {
	// StatusCode is the HTTP status the synchronous API answered (or would
	// have answered) with: 200 on success.
	StatusCode int
	// Body is the provider's answer body on success (e.g. a Message); nil
	// when Err is set.
	Body json.RawMessage
	// Err is the error the request ended with; nil on success.
	Err *ResultError
	// Usage is the token usage the provider reported.
	Usage Usage
	// CompletedAt is when the request was completed.
	CompletedAt time.Time
	// BatchID is the provider's id of the batch whose result this is;
	// empty for an answer of the sync route (a rescue's, or that of a
	// request sent sync) and for an error of llmfleet's own. Two
	// deliveries of one batch's result are one answer, paid once.
	BatchID string
}

// Completion is one request being completed: its result and, written in
// the same transaction, its ledger entry.
type Completion struct {
	// RequestID is llmfleet's id of the request.
	RequestID string
	// Result is its answer.
	Result *StoredResult
	// Ledger, if not nil, is the request's cost record. It is written only
	// if this completion is the one that completes the request, so that a
	// request has one entry whatever is retried.
	Ledger *LedgerEntry
}

// BatchState is where a durable batch is in its life.
type BatchState string

// The states of a durable batch.
const (
	// BatchIntent: recorded before the create call; the upstream id is not
	// known yet. After a crash such a batch is reconciled with the provider,
	// never blindly created again.
	BatchIntent BatchState = "intent"
	// BatchCreated: the provider accepted it; UpstreamID is set.
	BatchCreated BatchState = "created"
	// BatchResolved: every request of it was answered.
	BatchResolved BatchState = "resolved"
	// BatchFailed: the create call failed; its requests were answered with
	// the error or queued again.
	BatchFailed BatchState = "failed"
)

// StoredBatch is a batch as a Store keeps it. Its requests are the
// StoredRequests whose BatchID is its ID.
type StoredBatch struct {
	// ID is llmfleet's local id of the batch.
	ID string
	// Provider names the provider, CredentialID the credential's keyed
	// fingerprint.
	Provider, CredentialID string
	// UpstreamID is the provider's batch id, once known.
	UpstreamID string
	// State is where the batch is.
	State BatchState
	// Size is the number of requests in it.
	Size int
	// IntentAt is when the intent was recorded (before the create call);
	// CreatedAt is the provider's created_at; EndedAt its ended_at.
	IntentAt, CreatedAt, EndedAt time.Time
	// CreateDeadline is the deadline of the create call: after it (and a
	// settling margin) the create can no longer land, so a batch list read
	// then that shows no batch tagged with ID proves it was not created.
	CreateDeadline time.Time
}

// Store keeps llmfleet's durable state: the requests accepted for
// batching, the batches, their results, the sealed credentials needed to
// poll after a restart, and the cost ledger. Implementations must be safe
// for concurrent use, and each method's writes must be durable when it
// returns. Every implementation must pass the suite in package storetest.
type Store interface {
	// AddRequest records a request accepted for batching (State queued,
	// or empty), or one accepted and sent sync at once by the process
	// that accepted it (State submitted, no BatchID): such a request is
	// never claimed or pooled, and Pending (a SharedStore's Adopt) returns
	// it among the queued ones, State submitted, for a restart to answer:
	// its call was cut by the end of the process that made it. An id it
	// holds already is refused with an error wrapping ErrExists, storing
	// nothing. A request for which it returns an error is not stored; it
	// returns ctx's error soon after ctx ends, even while its write waits
	// (on a lock held elsewhere, say), and the request is then not
	// stored, whatever the write does later. Implementations should
	// commit concurrent calls together (group commit).
	AddRequest(ctx context.Context, r *StoredRequest) error
	// GetRequest returns one request, with its result if it has one.
	GetRequest(ctx context.Context, id string) (*StoredRequest, error)
	// RecordIntent records a batch about to be created (State intent) and
	// moves its requests to submitted with their custom_ids, in one
	// transaction. customIDs maps request id to custom_id.
	RecordIntent(ctx context.Context, b *StoredBatch, customIDs map[string]string) error
	// RecordCreated records the provider's id for a batch (State created).
	// A SharedStore refuses, with an error wrapping ErrStale, a batch
	// another live process owns (it adopted it while this one's create
	// was under way) or one no longer in flight, and makes this process
	// the owner of any other.
	RecordCreated(ctx context.Context, batchID, upstreamID string, createdAt time.Time) error
	// RecordCreateFailed marks a batch failed and puts its requests back in
	// the queue (requeue true) or leaves them to be completed with the
	// error by the caller. With requeue, a batch that is no intent any
	// more (recorded created, by another process that found it by its
	// tag) is left as it is and the error wraps ErrStale.
	RecordCreateFailed(ctx context.Context, batchID string, requeue bool) error
	// RecordEnded records that the provider reported the batch ended.
	RecordEnded(ctx context.Context, batchID string, endedAt time.Time) error
	// CompleteRequests stores the results of requests (State done) and their
	// ledger entries, all in one transaction. A request that is done
	// already keeps its first result, and no ledger entry is written for
	// it: each request's entry is written once, with the result it keeps.
	// It returns, for each completion of done in order, whether it
	// completed its request: false for a request that was done already
	// (by an earlier call, another process, or an earlier completion of
	// the same request in this call), whose stored result and entry
	// stand. An unknown request id fails the call with ErrNotFound,
	// storing nothing.
	CompleteRequests(ctx context.Context, done []Completion) (kept []bool, err error)
	// ResolveBatch marks a batch resolved.
	ResolveBatch(ctx context.Context, batchID string) error
	// Pending returns what a restart must pick up: the queued requests
	// (and those submitted without a batch: see AddRequest), oldest
	// first, and the batches in state intent or created, with their
	// submitted requests.
	Pending(ctx context.Context) (queued []*StoredRequest, batches []*PendingBatch, err error)
	// PutCredential stores a sealed credential under its fingerprint; it is
	// a no-op if one is stored already.
	PutCredential(ctx context.Context, credentialID string, sealed []byte) error
	// GetCredential returns a sealed credential.
	GetCredential(ctx context.Context, credentialID string) ([]byte, error)
	// AddLedger records ledger entries.
	AddLedger(ctx context.Context, entries []LedgerEntry) error
	// Ledger returns the ledger entries whose Time is in [from, to).
	Ledger(ctx context.Context, from, to time.Time) ([]LedgerEntry, error)
	// AddTurnarounds records observed batch turnarounds. Each sample is
	// one observation: none replaces another, however alike.
	AddTurnarounds(ctx context.Context, samples []TurnaroundSample) error
	// Turnarounds returns, per provider and model, the latest n samples
	// (oldest first), for the engine to learn from at start. The latest
	// are those with the latest At; of two with the same At, the one
	// added later. The samples come by Provider, then Model, then At
	// (ties in the order they were added). n <= 0 returns none.
	Turnarounds(ctx context.Context, n int) ([]TurnaroundSample, error)
	// AddCacheStats adds observed prompt-cache lookups to the counts
	// kept per provider, model, credential, lookup and entry (added up,
	// never replaced).
	AddCacheStats(ctx context.Context, stats []CacheStat) error
	// CacheStats returns the counts AddCacheStats added up, one per
	// provider, model, credential, lookup and entry.
	CacheStats(ctx context.Context) ([]CacheStat, error)
	// PutPrefixes records what was learned of prompt prefixes, per
	// credential and prefix hash: a Tokens above 0 replaces the one
	// kept, each expiry (SyncUntil, BatchUntil) and SeenAt keeps the
	// later of the stored and the given.
	PutPrefixes(ctx context.Context, prefixes []PrefixState) error
	// Prefixes returns what is kept of the prefixes of hashes under a
	// credential, in any order; hashes it does not hold are left out.
	Prefixes(ctx context.Context, credentialID string, hashes []string) ([]PrefixState, error)
	// Purge deletes the results, done requests and resolved or failed
	// batches older than resultsBefore, the prefixes last seen before
	// it, and the ledger entries and the turnaround samples older than
	// ledgerBefore (the cost history, and what was learnt from the same
	// batches, are kept longer than the answers), and returns how many
	// records it deleted.
	Purge(ctx context.Context, resultsBefore, ledgerBefore time.Time) (int, error)
	// Close releases the store.
	Close() error
}

// PendingBatch is a batch a restart must pick up, with its requests.
type PendingBatch struct {
	Batch    StoredBatch
	Requests []*StoredRequest
	// Answered are the requests of a created batch, or of an intent,
	// answered already by another route (a rescue's sync call): the
	// batch's results for them are paid too, and are to be recorded as
	// late when read (an intent's create may have landed: it is
	// reconciled, not concluded failed, while it has any).
	Answered []*StoredRequest
}

// TurnaroundSample is one observed batch turnaround: what the engine
// learns, per provider and model, how long a batch takes from.
type TurnaroundSample struct {
	// Provider and Model name what the batch was for.
	Provider, Model string
	// Size is the number of requests of the batch.
	Size int
	// Turnaround is ended_at - created_at as the provider reported them.
	Turnaround time.Duration
	// At is when the batch ended.
	At time.Time
}

// LedgerEntry is the cost record of one request.
type LedgerEntry struct {
	// RequestID is llmfleet's id of the request (may be empty for sync
	// requests that have none).
	RequestID string `json:"request_id,omitempty"`
	// Time is when the request was answered.
	Time time.Time `json:"time"`
	// BatchID is the provider's id of the batch that answered a batched
	// request; empty on the sync route.
	BatchID string `json:"batch_id,omitempty"`
	// Provider and Model name what answered; Route how.
	Provider string `json:"provider"`
	Model    string `json:"model"`
	Route    Route  `json:"route"`
	// Outcome is "ok" or the error type.
	Outcome string `json:"outcome"`
	// Usage is the provider's token usage.
	Usage Usage `json:"usage"`
	// CostUSD is the cost at the route taken; OtherRouteUSD what the other
	// route would have cost. Priced is false when the model was not in the
	// price table (both costs are then 0 and the tokens still count).
	CostUSD       float64 `json:"cost_usd"`
	OtherRouteUSD float64 `json:"other_route_usd"`
	Priced        bool    `json:"priced"`
	// Queued is the wait in the pool, Turnaround the batch turnaround,
	// Latency the whole time from acceptance to answer.
	Queued     time.Duration `json:"queued_ns"`
	Turnaround time.Duration `json:"turnaround_ns"`
	Latency    time.Duration `json:"latency_ns"`
	// Budget is the request's latency budget (0: none); BudgetMet whether
	// it was answered within it.
	Budget    time.Duration `json:"budget_ns"`
	BudgetMet bool          `json:"budget_met"`
	// Rescue marks the entries of a deadline rescue (see Rescue).
	Rescue Rescue `json:"rescue,omitempty"`
	// Client names who sent the request, for spend attribution: the
	// keyed fingerprint of the credential it was presented with (never
	// the key), or the client's configured name when the proxy holds the
	// upstream key. Empty when unknown (a library caller that set none).
	Client string `json:"client,omitempty"`
	// Tier is the service tier the provider served the request in, which
	// CostUSD is priced at; empty means the route's (TierOf(Route)). A
	// flex call the provider served in its standard tier is Route flex,
	// Tier standard.
	Tier Tier `json:"tier,omitempty"`
	// SyncUSD, when above 0, is what the sync route would have paid for
	// a request served at a discount, by the cost model: the sync route's
	// expected bill with the cache state it would have had without
	// llmfleet (the prefix the conversation's earlier turns cached read,
	// the rest written), rather than the request's own usage at sync
	// prices, which would count its batch's cache misses as if sync had
	// missed too. Pricing makes it the entry's OtherRouteUSD when it
	// is the lower of the two (a cache state the cost model does not
	// know is taken as cold, so its bill alone could show too much
	// saved).
	SyncUSD float64 `json:"-"`
	// MissUSD is what the request paid for cache writes its route caused:
	// prefixes it wrote that the other cache held (a batched turn of a
	// conversation warm in the sync cache, or a sync turn of one warm in
	// the batch cache), priced as writes less reads at its tier.
	MissUSD float64 `json:"miss_usd,omitempty"`
	// Rewrite names what llmfleet changed in the request's body:
	// "cache_ttl_1h" when its cache_control TTLs were raised to an hour
	// for its batch. Empty: sent as given.
	Rewrite string `json:"rewrite,omitempty"`
	// Estimated marks an entry whose usage is llmfleet's estimate, not
	// the provider's report: a call cut (by a hard deadline, or its
	// caller leaving) before its usage came, which the provider may
	// bill all the same.
	Estimated bool `json:"estimated,omitempty"`
}

// RewriteTTL1h is LedgerEntry.Rewrite of a request whose cache_control
// TTLs were raised to an hour for its batch.
const RewriteTTL1h = "cache_ttl_1h"

// Discounted reports whether the entry was served at a discount: in the
// flex tier or on the batch route (PricedTier). Its OtherRouteUSD is then
// what it would have cost sync, and the difference a saving.
func (e LedgerEntry) Discounted() bool {
	t := e.PricedTier()
	return t == TierFlex || t == TierBatch
}

// PricedTier returns the tier the entry is priced at: Tier, or the
// route's when the provider reported none.
func (e LedgerEntry) PricedTier() Tier {
	if e.Tier != "" {
		return e.Tier
	}
	return TierOf(e.Route)
}

// PaidUndelivered returns e as the entry of a rescue's part paid and not
// delivered (RescueLate): a call given up or cut after it may have
// reached the provider, whose answer, if any, no caller got. Its usage is
// estimated from its request body of bodyBytes (EstimatedUsage), and its
// request is judged by the answer it gets elsewhere (BudgetMet).
func (e LedgerEntry) PaidUndelivered(bodyBytes int) LedgerEntry {
	e.Rescue, e.BudgetMet = RescueLate, true
	e.Usage, e.Estimated = EstimatedUsage(int64(bodyBytes)), true
	return e
}

// Rescue is an entry's part in a deadline rescue: a batched request whose
// answer was not in when its budget was about to run out was sent sync as
// well; the first answer is delivered, the other is paid and not.
type Rescue string

// The parts an entry can play in a rescue.
const (
	// RescueNone: the entry is no rescue's.
	RescueNone Rescue = ""
	// RescueSync: the rescue's sync call, whose answer was delivered.
	RescueSync Rescue = "sync"
	// RescueLate: an answer that came second (the batch's after the
	// rescue, or the rescue's after the batch's): paid, not delivered.
	RescueLate Rescue = "late"
)
