package storetest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
)

// typedResults returns a success and an error result of each kind: the
// answers request i+1 may end with.
func typedResults() []*llmfleet.StoredResult {
	fail := func(status int, e llmfleet.ResultError) *llmfleet.StoredResult {
		return &llmfleet.StoredResult{StatusCode: status, Err: &e}
	}
	fromBatch := result(1)
	fromBatch.BatchID = "msgbatch_01ok"
	rs := []*llmfleet.StoredResult{
		result(1),
		fromBatch,
		errorResult(),
		// A provider's refusal on the sync route: no envelope, no batch.
		fail(400, llmfleet.ResultError{Kind: llmfleet.KindProvider, StatusCode: 400,
			Type: "invalid_request_error", Message: "max_tokens: Field required"}),
		fail(504, llmfleet.ResultError{Kind: llmfleet.KindBudget, Message: llmfleet.ErrBudgetExceeded.Error()}),
		fail(529, llmfleet.ResultError{Kind: llmfleet.KindExpired, Message: "expired after 24h", BatchID: "msgbatch_01exp"}),
		fail(500, llmfleet.ResultError{Kind: llmfleet.KindCanceled, BatchID: "msgbatch_01can"}),
		fail(500, llmfleet.ResultError{Kind: llmfleet.KindMissing, Message: llmfleet.ErrResultMissing.Error(),
			BatchID: "msgbatch_01mis"}),
		fail(529, llmfleet.ResultError{Kind: llmfleet.KindClosed}),
		fail(502, llmfleet.ResultError{Kind: llmfleet.KindOther, Message: "dial tcp 127.0.0.1:443: connection refused \u00e9"}),
		// A body that is not JSON (an HTML page from a proxy in between)
		// is kept as it is too.
		fail(502, llmfleet.ResultError{Kind: llmfleet.KindProvider, StatusCode: 502, Type: "api_error",
			Message: "Bad Gateway", Body: json.RawMessage("<html><body>502 Bad Gateway</body></html>\n")}),
	}
	for i, r := range rs {
		r.CompletedAt = base.Add(3*time.Hour + time.Duration(i)*time.Millisecond)
	}
	return rs
}

// typedResultsRoundTrip: a success comes back with its Body and no Err; an
// error with its Err field for field, Err.Body byte for byte, and no
// Body; across a reopen too.
func (s *suite) typedResultsRoundTrip(t *testing.T) {
	st := s.store(t)
	want := typedResults()
	var cs []llmfleet.Completion
	for i, res := range want {
		r := request(i + 1)
		s.add(t, st, r)
		cs = append(cs, llmfleet.Completion{RequestID: r.ID, Result: res})
	}
	if _, err := st.CompleteRequests(ctx(t), cs); err != nil {
		t.Fatal(err)
	}
	check := func(st llmfleet.Store) {
		t.Helper()
		for i, res := range typedResults() {
			r := request(i + 1)
			checkRequest(t, s.get(t, st, r.ID), with(r, llmfleet.RequestDone, "", "", res))
		}
	}
	check(st)
	if s.h.Reopen != nil {
		check(s.reopened(t, st))
	}
}

// createDeadline: RecordIntent keeps a batch's CreateDeadline, to the
// nanosecond, and Pending returns it in every state; a batch without one
// comes back without one.
func (s *suite) createDeadline(t *testing.T) {
	st := s.store(t)
	r1, r2 := request(1), request(2)
	s.add(t, st, r1, r2)
	b1, b2 := batch(1), batch(2)
	b2.CreateDeadline = time.Time{}
	for _, b := range []struct {
		b *llmfleet.StoredBatch
		r *llmfleet.StoredRequest
	}{{b1, r1}, {b2, r2}} {
		if err := st.RecordIntent(ctx(t), b.b, customIDs(b.r)); err != nil {
			t.Fatal(err)
		}
	}
	want := func(b *llmfleet.StoredBatch) llmfleet.StoredBatch {
		return llmfleet.StoredBatch{ID: b.ID, Provider: b.Provider, CredentialID: b.CredentialID,
			State: llmfleet.BatchIntent, Size: 1, IntentAt: b.IntentAt, CreateDeadline: b.CreateDeadline}
	}
	w1, w2 := want(b1), want(b2)
	check := func(st llmfleet.Store, when string) {
		t.Helper()
		_, pb := s.pending(t, st)
		if len(pb) != 2 {
			t.Fatalf("Pending %s: %d batches, want 2", when, len(pb))
		}
		checkPendingBatch(t, pb[0], w1, with(r1, llmfleet.RequestSubmitted, b1.ID, "r0", nil))
		checkPendingBatch(t, pb[1], w2, with(r2, llmfleet.RequestSubmitted, b2.ID, "r0", nil))
	}
	check(st, "after intent")
	created := base.Add(time.Hour + 2*time.Second)
	if err := st.RecordCreated(ctx(t), b1.ID, "msgbatch_1", created); err != nil {
		t.Fatal(err)
	}
	w1.State, w1.UpstreamID, w1.CreatedAt = llmfleet.BatchCreated, "msgbatch_1", created
	check(st, "after created")
	if s.h.Reopen != nil {
		check(s.reopened(t, st), "after reopen")
	}
}

// locked: while a store is open, a second one on the same data is refused
// with ErrLocked, and the first goes on working; a reopened store holds
// the data again.
func (s *suite) locked(t *testing.T) {
	if s.h.Second == nil {
		t.Skip("Harness.Second is nil")
	}
	st := s.store(t)
	s.add(t, st, request(1))
	second := func(st llmfleet.Store, when string) {
		t.Helper()
		if err := s.h.Second(t, st); !errors.Is(err, llmfleet.ErrLocked) {
			t.Fatalf("opening a second store on the same data %s: error %v, want llmfleet.ErrLocked", when, err)
		}
	}
	second(st, "while the first is open")
	s.add(t, st, request(2))
	checkRequest(t, s.get(t, st, "lfr_0001"), request(1))
	if s.h.Reopen == nil {
		return
	}
	st = s.reopened(t, st)
	second(st, "after a reopen")
	for i := 1; i <= 2; i++ {
		checkRequest(t, s.get(t, st, fmt.Sprintf("lfr_%04d", i)), request(i))
	}
}

func checkResult(t *testing.T, id string, got, want *llmfleet.StoredResult) {
	t.Helper()
	switch {
	case want == nil && got != nil:
		t.Errorf("%s: Result %+v, want none", id, got)
	case want != nil && got == nil:
		t.Errorf("%s: no Result, want one", id)
	case want != nil:
		if got.StatusCode != want.StatusCode {
			t.Errorf("%s: result status %d, want %d", id, got.StatusCode, want.StatusCode)
		}
		if !bytes.Equal(got.Body, want.Body) {
			t.Errorf("%s: result body changed:\n got %q\nwant %q", id, got.Body, want.Body)
		}
		checkResultError(t, id, got.Err, want.Err)
		if got.Usage != want.Usage {
			t.Errorf("%s: result usage %+v, want %+v", id, got.Usage, want.Usage)
		}
		if !got.CompletedAt.Equal(want.CompletedAt) {
			t.Errorf("%s: CompletedAt %v, want %v", id, got.CompletedAt, want.CompletedAt)
		}
		if got.BatchID != want.BatchID {
			t.Errorf("%s: result BatchID %q, want %q", id, got.BatchID, want.BatchID)
		}
	}
}

func checkResultError(t *testing.T, id string, got, want *llmfleet.ResultError) {
	t.Helper()
	switch {
	case want == nil && got != nil:
		t.Errorf("%s: result Err %+v, want none", id, got)
	case want != nil && got == nil:
		t.Errorf("%s: result has no Err, want %+v", id, want)
	case want != nil:
		if !bytes.Equal(got.Body, want.Body) {
			t.Errorf("%s: result Err.Body changed:\n got %q\nwant %q", id, got.Body, want.Body)
		}
		g, w := *got, *want
		g.Body, w.Body = nil, nil
		if !reflect.DeepEqual(g, w) {
			t.Errorf("%s: result Err\n got %+v\nwant %+v", id, g, w)
		}
	}
}
