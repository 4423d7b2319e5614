package llmfleet

import (
	"context"
	"errors"
	"strconv"
)

// Outcome returns the ledger outcome of a request that ended with err:
// "ok" for nil, the provider's error type for an *Error, and a
// short name for llmfleet's own errors, the names the dispatcher gives
// its ledger entries.
func Outcome(err error) string {
	if err == nil {
		return "ok"
	}
	var pe *Error
	switch {
	case errors.As(err, &pe):
		if pe.Type != "" {
			return pe.Type
		}
		return "http_" + strconv.Itoa(pe.StatusCode)
	case errors.Is(err, ErrBudgetExceeded):
		return "budget_exceeded"
	case errors.Is(err, ErrUpstreamTimeout):
		return "timeout_error"
	case errors.Is(err, ErrBatchCanceled):
		return "canceled"
	case errors.Is(err, ErrBatchExpired):
		return "expired"
	case errors.Is(err, ErrResultMissing):
		return "result_missing"
	case errors.Is(err, ErrClosed):
		return "closed"
	case errors.Is(err, ErrUnknownProvider):
		return "unknown_provider"
	case errors.Is(err, context.Canceled):
		return "caller_canceled"
	case errors.Is(err, context.DeadlineExceeded):
		return "deadline_exceeded"
	default:
		return "error"
	}
}
