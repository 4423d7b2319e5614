package llmfleet

import (
	"context"
	"time"
)

// FuncSubmitter is implemented by Submitters that can batch a request
// without a goroutine waiting for its answer: the proxy uses it, when the
// Submitter has it, to park a caller on its connection alone.
type FuncSubmitter interface {
	// SubmitBatchFunc pools req into a batch whatever its budget, as
	// SubmitBatch does, without waiting: done is called exactly once,
	// with the answer or the error SubmitBatch would have returned (one
	// wrapping ErrBudgetExceeded when the budget, counted from now, runs
	// out first; ctx's error when ctx ends first). An error returned
	// means done will not be called. done may be called with the
	// Submitter's locks held: it must be quick and must not call back
	// into the Submitter.
	SubmitBatchFunc(ctx context.Context, budget time.Duration, req *Request, done func(*Response, error)) error
}
