package llmfleet

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"time"
)

// Provider is a model provider's API: its synchronous create-message call
// and its batch API. Implementations must be safe for concurrent use.
type Provider interface {
	// Name returns the provider's name, e.g. "anthropic".
	Name() string
	// Limits returns the provider's per-batch limits.
	Limits() BatchLimits
	// Send makes a synchronous, non-streaming create-message call. An error
	// answer from the provider is returned as an *Error.
	Send(ctx context.Context, req *Request) (*Response, error)
	// Stream makes a synchronous streaming create-message call and returns
	// the provider's server-sent-event stream once the provider answered 200.
	Stream(ctx context.Context, req *Request) (io.ReadCloser, error)
	// Inspect reads what the engine needs of a request: its model and the
	// key of the pool it may share a batch in. Requests of one provider and
	// credential share a batch only if their pool keys are equal; the key
	// names whatever the provider applies to a whole batch (headers such
	// as anthropic-beta, the endpoint, the model where a batch holds one).
	// An error means no batch can take the request.
	Inspect(req *Request) (RequestInfo, error)
	// BatchParams returns the body req goes into a batch with (e.g.
	// without "stream"), byte for byte otherwise.
	BatchParams(req *Request) (json.RawMessage, error)
	// CreateBatch creates one batch job holding items, tagged with tag
	// (llmfleet's id of the batch, 1 to 40 characters of [A-Za-z0-9_];
	// every item's CustomID begins with tag and "-") wherever the
	// provider's API lets a batch carry it, so that FindBatch can find it. It never reconciles a failed create itself: a failure
	// that leaves open whether the batch was created is returned as an
	// *UncertainError, one that proves it was not (an error answer that
	// refuses the call, a call never delivered) as anything else.
	CreateBatch(ctx context.Context, cred Credential, tag string, header http.Header, items []BatchItem) (*Batch, error)
	// FindBatch looks for the batch created with q.Tag: it returns it, or
	// nil and no error when the provider's list proves that no batch
	// created since q.Since carries the tag, or ErrUndetermined when
	// batches that might carry it cannot be told apart yet (try again
	// later).
	FindBatch(ctx context.Context, cred Credential, q BatchQuery) (*Batch, error)
	// GetBatch retrieves one batch.
	GetBatch(ctx context.Context, cred Credential, id string) (*Batch, error)
	// ListBatches lists the credential's batches, newest first, one page
	// after afterID (empty for the first page).
	ListBatches(ctx context.Context, cred Credential, afterID string, limit int) (*BatchPage, error)
	// Results streams the results of an ended batch to fn, in the order the
	// provider sends them (any order). An error from fn stops the stream.
	Results(ctx context.Context, cred Credential, id string, fn func(BatchResult) error) error
	// CancelBatch asks the provider to cancel a batch.
	CancelBatch(ctx context.Context, cred Credential, id string) (*Batch, error)
}

// RequestInfo is what the engine reads of a request.
type RequestInfo struct {
	// Model is the model the request asks for.
	Model string
	// PoolKey must be equal for two requests of one credential to share a
	// batch.
	PoolKey string
	// Prompt is the request's prompt-cache structure (no breakpoints for
	// a provider, or a request, without prompt caching).
	Prompt Prompt
	// Unbatchable says no batch can carry the request (an OpenAI
	// background response): it is routed as Request.NoBatch is.
	Unbatchable bool
}

// BatchQuery asks FindBatch for the batch created with a tag.
type BatchQuery struct {
	// Tag is the tag the batch was created with.
	Tag string
	// Since is no later than the create call was sent (the provider allows
	// for clock skew).
	Since time.Time
	// Size is the number of requests the batch was created with.
	Size int
	// Known, if set, reports the provider ids of batches already known to
	// carry other tags, so that they need not be looked into.
	Known func(id string) bool
}

// BatchLimits are a provider's limits on one batch.
type BatchLimits struct {
	// MaxRequests is the most requests one batch may hold.
	MaxRequests int
	// MaxBytes is the largest encoded create body.
	MaxBytes int64
}

// BatchItem is one request inside a batch create call.
type BatchItem struct {
	// CustomID links the item to its result; unique within the batch.
	CustomID string
	// Params is the create-message body, without "stream".
	Params json.RawMessage
	// Endpoint is the request's endpoint (Request.Endpoint; empty: the
	// provider's create-message endpoint). The items of one batch share it.
	Endpoint string
}

// BatchStatus is the processing status of a batch.
type BatchStatus string

// The processing statuses of a batch.
const (
	BatchInProgress BatchStatus = "in_progress"
	BatchCanceling  BatchStatus = "canceling"
	BatchEnded      BatchStatus = "ended"
)

// RequestCounts counts a batch's requests by state.
type RequestCounts struct {
	// Processing counts the requests not yet ended; the provider keeps all
	// of them here until the whole batch ends.
	Processing int `json:"processing"`
	// Succeeded, Errored, Canceled and Expired count the ended requests
	// by outcome.
	Succeeded int `json:"succeeded"`
	Errored   int `json:"errored"`
	Canceled  int `json:"canceled"`
	Expired   int `json:"expired"`
}

// Total returns the number of requests in the batch.
func (c RequestCounts) Total() int {
	return c.Processing + c.Succeeded + c.Errored + c.Canceled + c.Expired
}

// Batch is a provider batch job.
type Batch struct {
	// ID is the provider's batch id ("msgbatch_...").
	ID string
	// Status is its processing status.
	Status BatchStatus
	// Counts counts its requests by state.
	Counts RequestCounts
	// CreatedAt, EndedAt (zero until ended) and ExpiresAt are the
	// provider's times.
	CreatedAt, EndedAt, ExpiresAt time.Time
	// ResultsURL is where its results can be read, once it ended.
	ResultsURL string
	// Failure, set only on an ended batch, is the provider's error for a
	// batch that failed as a whole after it was created (OpenAI: status
	// "failed" with errors.data, e.g. token_limit_exceeded): none of its
	// requests ran. The engine answers each request Results did not
	// answer with it, or sends it another way if its budget allows.
	Failure *Error
	// PollAfter, if positive, is how long the provider asked that the
	// batch not be looked at again (the Retry-After of the answer that
	// reported it: Anthropic sends 10s on a running batch). The engine
	// polls the batch no sooner. Zero: the provider asked nothing.
	PollAfter time.Duration
}

// BatchPage is one page of a batch listing.
type BatchPage struct {
	// Batches are the page's batches, newest first.
	Batches []Batch
	// HasMore tells whether older batches follow.
	HasMore bool
	// LastID is the id to list after for the next page.
	LastID string
}

// ResultType is the outcome of one request inside a batch.
type ResultType string

// The outcomes of a batched request.
const (
	ResultSucceeded ResultType = "succeeded"
	ResultErrored   ResultType = "errored"
	ResultCanceled  ResultType = "canceled"
	ResultExpired   ResultType = "expired"
)

// BatchResult is the result of one request of a batch.
type BatchResult struct {
	// CustomID is the custom_id of the request it answers.
	CustomID string
	// Type is the request's outcome.
	Type ResultType
	// Message is the Message object when Type is ResultSucceeded.
	Message json.RawMessage
	// Error is the provider's error when Type is ResultErrored.
	Error *Error
	// Usage and Model are read from Message by the provider.
	Usage Usage
	Model string
}

// TTLUpgrader is implemented by a provider whose requests carry prompt
// cache TTLs that the engine may raise for a batched request whose wait
// outlasts them (Anthropic: cache_control ttl "5m" to "1h").
type TTLUpgrader interface {
	// UpgradeTTL returns a batch item's params with every shorter cache
	// TTL raised to an hour, and how many it raised (0: params as they
	// were).
	UpgradeTTL(params json.RawMessage) (json.RawMessage, int, error)
}

// CacheObserver is implemented by a Submitter that learns prompt caching
// from the answers of sync calls made outside it (the proxy passes its
// sync route's calls upstream itself): req is the request as sent, u the
// usage its answer reported at at. It returns what the call paid for
// cache writes its route caused (LedgerEntry.MissUSD).
type CacheObserver interface {
	ObserveCache(req *Request, route Route, u Usage, at time.Time) (missUSD float64)
}
