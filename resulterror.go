package llmfleet

import (
	"encoding/json"
	"errors"
)

// ErrorKind names what a request that got no answer ended with.
type ErrorKind string

// The kinds of ResultError.
const (
	// KindProvider: the provider answered with an error (StatusCode, Type,
	// Message and, if it sent one, its envelope in Body).
	KindProvider ErrorKind = "provider"
	// KindBudget: the request's latency budget ran out.
	KindBudget ErrorKind = "budget_exceeded"
	// KindExpired: the batch expired before the request ran.
	KindExpired ErrorKind = "batch_expired"
	// KindCanceled: the batch was canceled before the request ran.
	KindCanceled ErrorKind = "batch_canceled"
	// KindMissing: the batch ended without a result for the request.
	KindMissing ErrorKind = "result_missing"
	// KindClosed: llmfleet shut down before the request was answered.
	KindClosed ErrorKind = "closed"
	// KindOther: any other failure (Message says what).
	KindOther ErrorKind = "error"
)

// ResultError is the typed error a request ended with, as a Store keeps
// it. ResultErrorOf makes one from an error; Error turns it back, so that a
// stored error and a live one are rendered alike.
type ResultError struct {
	Kind       ErrorKind       `json:"kind"`
	StatusCode int             `json:"status_code,omitempty"`
	Type       string          `json:"type,omitempty"`
	Message    string          `json:"message,omitempty"`
	RequestID  string          `json:"request_id,omitempty"`
	Body       json.RawMessage `json:"body,omitempty"`
	// BatchID is the provider's id of the batch the request was in, if any.
	BatchID string `json:"batch_id,omitempty"`
}

// ResultErrorOf returns the typed form of err; nil for nil.
func ResultErrorOf(err error) *ResultError {
	if err == nil {
		return nil
	}
	re := &ResultError{Kind: KindOther, Message: err.Error()}
	var be *BatchError
	if errors.As(err, &be) {
		re.BatchID = be.BatchID
	}
	var pe *Error
	switch {
	case errors.As(err, &pe):
		re.Kind, re.StatusCode, re.Type, re.Message, re.RequestID = KindProvider, pe.StatusCode, pe.Type, pe.Message, pe.RequestID
		re.Body = json.RawMessage(pe.Body)
	case errors.Is(err, ErrBudgetExceeded):
		re.Kind = KindBudget
	case errors.Is(err, ErrBatchExpired):
		re.Kind = KindExpired
	case errors.Is(err, ErrBatchCanceled):
		re.Kind = KindCanceled
	case errors.Is(err, ErrResultMissing):
		re.Kind = KindMissing
	case errors.Is(err, ErrClosed):
		re.Kind = KindClosed
	}
	return re
}

// kindErrors maps the kinds that stand for one of llmfleet's errors.
var kindErrors = map[ErrorKind]error{
	KindBudget:   ErrBudgetExceeded,
	KindExpired:  ErrBatchExpired,
	KindCanceled: ErrBatchCanceled,
	KindMissing:  ErrResultMissing,
	KindClosed:   ErrClosed,
}

// Error returns the error e stands for: an *Error for a provider's error,
// the matching sentinel (errors.Is works) otherwise, wrapped in a
// *BatchError when e names a batch.
func (e *ResultError) Error() error {
	var err error
	switch base, ok := kindErrors[e.Kind]; {
	case e.Kind == KindProvider:
		err = &Error{StatusCode: e.StatusCode, Type: e.Type, Message: e.Message, RequestID: e.RequestID, Body: []byte(e.Body)}
	case ok:
		err = base
		if e.Message != "" && e.Message != base.Error() {
			err = &kindError{base: base, msg: e.Message}
		}
	default:
		err = errors.New(e.Message)
	}
	if e.BatchID != "" {
		err = &BatchError{BatchID: e.BatchID, Err: err}
	}
	return err
}

// kindError is a sentinel error with the message it was stored with.
type kindError struct {
	base error
	msg  string
}

func (e *kindError) Error() string { return e.msg }
func (e *kindError) Unwrap() error { return e.base }
