package llmfleet

import (
	"context"
	"time"
)

// Submitter routes requests by latency budget. The dispatch.Dispatcher is
// the engine's implementation; the proxy and the SDK middleware take a
// Submitter so that they do not depend on the engine's package.
type Submitter interface {
	// Submit routes req by budget and waits for its answer. A budget of 0
	// means none was given.
	Submit(ctx context.Context, budget time.Duration, req *Request) (*Response, error)
	// SubmitSync sends req to the synchronous endpoint.
	SubmitSync(ctx context.Context, req *Request) (*Response, error)
	// SubmitBatch pools req into a batch, whatever its budget; budget, if
	// positive, still bounds how long it waits and when its pool flushes.
	SubmitBatch(ctx context.Context, budget time.Duration, req *Request) (*Response, error)
	// Plan returns the route Submit would choose for req now.
	Plan(budget time.Duration, req *Request) Route
	// Stats returns the counters of the engine.
	Stats() Stats
}

// Stats are the dispatcher's counters.
type Stats struct {
	// SyncCalls counts the requests sent to the synchronous endpoint.
	SyncCalls int64 `json:"sync_calls"`
	// BatchedCalls counts the requests accepted for batching.
	BatchedCalls int64 `json:"batched_calls"`
	// FlexCalls counts the requests sent to the flex tier (each once,
	// however often retried), FlexFallbacks those of them that went to
	// the standard tier in the end.
	FlexCalls     int64 `json:"flex_calls"`
	FlexFallbacks int64 `json:"flex_fallbacks"`
	// BatchesSubmitted counts the batches created upstream, BatchesEnded
	// those seen ended.
	BatchesSubmitted int64 `json:"batches_submitted"`
	BatchesEnded     int64 `json:"batches_ended"`
	// Errors counts the requests answered with an error.
	Errors int64 `json:"errors"`
	// QueueDepth is the number of requests waiting in pools now.
	QueueDepth int64 `json:"queue_depth"`
	// BatchesInFlight is the number of batches created and not yet
	// answered now.
	BatchesInFlight int64 `json:"batches_in_flight"`
	// ManagementCalls counts the batch API calls made (create, retrieve,
	// list, results, cancel).
	ManagementCalls int64 `json:"management_calls"`
	// DroppedResults counts results that arrived after their caller left.
	DroppedResults int64 `json:"dropped_results"`
	// BudgetMisses counts requests whose budget ran out before an answer.
	BudgetMisses int64 `json:"budget_misses"`
}

// Tickets is implemented by Submitters that can accept a request without
// waiting for its answer and keep the answer to be read later (the
// dispatcher does when it has a Store).
type Tickets interface {
	// Enqueue accepts req for batching and returns llmfleet's id of it.
	Enqueue(ctx context.Context, budget time.Duration, req *Request) (string, error)
	// Lookup returns the stored request and, once answered, its result.
	// Only the credential that submitted it may read it: any other gets
	// ErrNotFound.
	Lookup(ctx context.Context, id string, cred Credential) (*StoredRequest, error)
}

// FlexObserver is implemented by Submitters that learn from flex calls
// made outside them: a caller that makes its own flex calls reports each
// attempt so that the engine's routing learns flex latency and which
// models refuse the tier. (The proxy runs its flex calls through a
// FlexExecutor, which learns from them itself.)
type FlexObserver interface {
	// ObserveFlex reports one flex attempt of a provider's model: how long
	// it took to its answer's headers, and how it ended: nil for an
	// answer, or an error matching ErrFlexUnavailable or
	// ErrFlexUnsupported (other failures need not be reported).
	ObserveFlex(provider, model string, latency time.Duration, err error)
}

// FlexExecutor is implemented by Submitters that run the flex attempts of
// a call whose attempts are sent by its caller: the proxy sends its flex
// calls through its reverse proxy, to stream them as they come, and the
// engine decides, with the reserve its routing planned with, when an
// attempt is retried, waited for or given up for the standard tier. It
// learns from each attempt as a FlexObserver would.
type FlexExecutor interface {
	// ExecuteFlex runs the flex attempts of a call of provider's model
	// whose budget counts from start (0: none). attempt sends one attempt
	// in the flex tier, within its context, and returns nil once answered
	// (the caller keeps the answer), an error matching ErrFlexUnavailable
	// or ErrFlexUnsupported for a refusal, or another error to give up
	// with. ExecuteFlex returns true once an attempt was answered; false
	// and nil when the call is to be sent to the standard tier; else the
	// error to give up with.
	ExecuteFlex(ctx context.Context, provider, model string, start time.Time, budget time.Duration,
		attempt func(context.Context) error) (bool, error)
}
