package llmfleet

import (
	"errors"
	"fmt"
	"time"
)

// Errors returned by llmfleet for requests that got no answer from the model.
var (
	// ErrClosed is returned for requests submitted after Close began.
	ErrClosed = errors.New("llmfleet: dispatcher closed")
	// ErrBatchCanceled is returned for a batched request whose batch was
	// canceled before the request ran.
	ErrBatchCanceled = errors.New("llmfleet: batch request canceled")
	// ErrBatchExpired is returned for a batched request that the provider
	// did not process before the batch expired.
	ErrBatchExpired = errors.New("llmfleet: batch request expired")
	// ErrBudgetExceeded is returned when a request's latency budget ran out
	// before its answer arrived.
	ErrBudgetExceeded = errors.New("llmfleet: latency budget exceeded")
	// ErrUpstreamTimeout is returned for a call the provider did not
	// answer within the upstream timeout (dispatch.Policy.UpstreamTimeout,
	// serve's --upstream-timeout), which bounds a hung call whatever its
	// budget. The faces answer it 504 timeout_error.
	ErrUpstreamTimeout = errors.New("llmfleet: the upstream did not answer within the upstream timeout")
	// ErrUnknownProvider is returned for a request naming no configured provider.
	ErrUnknownProvider = errors.New("llmfleet: unknown provider")
	// ErrResultMissing is returned when an ended batch carried no result
	// for a request.
	ErrResultMissing = errors.New("llmfleet: batch ended without a result for the request")
	// ErrNoStore is returned by the Tickets methods of a Submitter that
	// keeps no durable state, and so cannot hold an answer to be read later.
	ErrNoStore = errors.New("llmfleet: no durable store to keep answers")
	// ErrStore is wrapped by the error of a request that llmfleet could
	// not record in, or read from, its own database (the Store): the
	// fault is llmfleet's state, not the provider's, and nothing was sent
	// upstream for it. The faces answer it 503, naming the database.
	ErrStore = errors.New("llmfleet: its database failed")
	// ErrUndetermined is returned by Provider.FindBatch when batches that
	// might carry the tag cannot be told apart yet.
	ErrUndetermined = errors.New("llmfleet: cannot tell yet whether the batch exists")
	// ErrNotDelivered marks a call that never reached the provider (the
	// connection was refused, or failed before the request was written):
	// the provider did nothing.
	ErrNotDelivered = errors.New("llmfleet: request not delivered to the provider")
	// ErrIDConflict is returned for a request whose caller-chosen ID
	// (Request.ID) names a request already accepted with another
	// credential or another body: an idempotent retry must repeat the
	// request exactly.
	ErrIDConflict = errors.New("llmfleet: request id already used for another request")
	// ErrFlexUnavailable is matched (errors.Is) by a provider's error
	// answer refusing a flex call for lack of capacity (OpenAI: 429
	// "resource unavailable"), which is not billed: the call may be
	// retried later, or sent to the standard tier.
	ErrFlexUnavailable = errors.New("llmfleet: flex capacity unavailable")
	// ErrFlexUnsupported is matched by a provider's error answer refusing
	// the flex tier for the model (OpenAI: a 400 naming service_tier): the
	// model has no flex tier, and the call may be sent to the standard
	// tier at once.
	ErrFlexUnsupported = errors.New("llmfleet: flex tier not offered for the model")
)

// UncertainError is the failure of a call after which the provider may
// have carried it out: the request was written and no answer came
// (Answered false: it may still land until the call's deadline), or an
// answer came that does not prove it was refused, such as a 503 (Answered
// true: whatever the provider did, it did before answering).
type UncertainError struct {
	Answered bool
	Err      error
}

// Error implements error.
func (e *UncertainError) Error() string {
	return "llmfleet: the provider may have carried out the call: " + e.Err.Error()
}

// Unwrap returns the call's error.
func (e *UncertainError) Unwrap() error { return e.Err }

// BudgetMet is the one definition of a kept budget: a successful answer
// (ok) within it (any answer is within no budget, 0). Every face and the
// ledger decide "budget met" with it.
func BudgetMet(ok bool, latency, budget time.Duration) bool {
	return ok && (budget <= 0 || latency <= budget)
}

// Error is an error answered by a provider, in the shape of its error
// envelope. For a batched request that errored, StatusCode is the HTTP status
// the synchronous API would have answered with.
type Error struct {
	// StatusCode is the HTTP status.
	StatusCode int
	// Type is the provider's error type, e.g. "invalid_request_error".
	Type string
	// Message is the provider's error message.
	Message string
	// RequestID is the provider's request id, if any.
	RequestID string
	// RetryAfter is the delay the provider asked for, if any.
	RetryAfter time.Duration
	// Body is the raw error envelope, if the provider sent one.
	Body []byte
	// Reason, if set, classifies the answer in the vocabulary's terms
	// (ErrFlexUnavailable, ErrFlexUnsupported), so that errors.Is sees it.
	Reason error
}

// Unwrap returns Reason.
func (e *Error) Unwrap() error { return e.Reason }

// Error implements error.
func (e *Error) Error() string {
	return fmt.Sprintf("llmfleet: provider error %d %s: %s", e.StatusCode, e.Type, e.Message)
}

// BatchError is the error of a batched request that got no Message: the
// provider's *Error for an errored result, or ErrBatchCanceled,
// ErrBatchExpired or ErrResultMissing, together with the provider's id of
// the batch it was in. errors.Is and errors.As see through it.
type BatchError struct {
	// BatchID is the provider's batch id.
	BatchID string
	// Err is the request's error.
	Err error
}

// Error implements error.
func (e *BatchError) Error() string { return e.Err.Error() + " (batch " + e.BatchID + ")" }

// Unwrap returns the request's error.
func (e *BatchError) Unwrap() error { return e.Err }
