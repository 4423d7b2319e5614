package geminiwire

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/llmfleet/llmfleet"
)

func TestFailure(t *testing.T) {
	shed := Envelope(503, "overloaded", RetryInfo(7e9))
	for _, c := range []struct {
		err    error
		status int
		name   string
	}{
		{&llmfleet.Error{StatusCode: 503, Body: shed}, 503, StatusUnavailable},
		{&llmfleet.BatchError{BatchID: "b", Err: &llmfleet.Error{StatusCode: 400, Message: "bad", Body: []byte(`{"type":"error"}`)}}, 400, StatusInvalidArgument},
		{fmt.Errorf("x: %w", llmfleet.ErrBudgetExceeded), 504, StatusDeadlineExceeded},
		{llmfleet.ErrUpstreamTimeout, 504, StatusDeadlineExceeded},
		{fmt.Errorf("%w: disk", llmfleet.ErrStore), 503, StatusUnavailable},
		{llmfleet.ErrBatchExpired, 503, StatusUnavailable},
		{llmfleet.ErrBatchCanceled, 500, StatusInternal},
		{context.Canceled, 499, StatusCancelled},
		{llmfleet.ErrIDConflict, 400, StatusInvalidArgument},
		{errors.New("dial tcp: refused"), 502, StatusInternal},
	} {
		status, body := Failure(c.err)
		s, ok := ParseError(body)
		if status != c.status || !ok || s.Code != c.status || s.Status != c.name || s.Message == "" {
			t.Errorf("Failure(%v) = %d %s", c.err, status, body)
		}
	}
	if _, body := Failure(&llmfleet.Error{StatusCode: 503, Body: shed}); string(body) != string(shed) {
		t.Errorf("the provider's envelope not kept: %s", body)
	}
	if _, body := Failure(llmfleet.ErrStore); !func() bool { s, _ := ParseError(body); d, ok := s.RetryDelay(); return ok && d == 3e9 }() {
		t.Errorf("store failure without its RetryInfo: %s", body)
	}
}
