package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
)

// checkPendingBatch compares a pending batch with the batch recorded and
// the requests it should still list.
func checkPendingBatch(t *testing.T, got *llmfleet.PendingBatch, want llmfleet.StoredBatch, reqs ...*llmfleet.StoredRequest) {
	t.Helper()
	g := got.Batch
	if g.ID != want.ID || g.Provider != want.Provider || g.CredentialID != want.CredentialID ||
		g.UpstreamID != want.UpstreamID || g.State != want.State || g.Size != want.Size {
		t.Errorf("pending batch\n got %+v\nwant %+v", g, want)
	}
	if !g.IntentAt.Equal(want.IntentAt) || !g.CreatedAt.Equal(want.CreatedAt) || !g.EndedAt.Equal(want.EndedAt) {
		t.Errorf("batch %s: times %v %v %v, want %v %v %v", want.ID, g.IntentAt, g.CreatedAt, g.EndedAt,
			want.IntentAt, want.CreatedAt, want.EndedAt)
	}
	if !g.CreateDeadline.Equal(want.CreateDeadline) {
		t.Errorf("batch %s: CreateDeadline %v, want %v", want.ID, g.CreateDeadline, want.CreateDeadline)
	}
	if len(got.Requests) != len(reqs) {
		t.Fatalf("batch %s: requests %v, want %v", want.ID, ids(got.Requests), ids(reqs))
	}
	for i, r := range reqs {
		checkRequest(t, got.Requests[i], r)
	}
}

func (s *suite) intentNotQueued(t *testing.T) {
	st := s.store(t)
	r1, r2, r3 := request(1), request(2), request(3)
	s.add(t, st, r1, r2, r3)
	if err := st.RecordIntent(ctx(t), batch(1), customIDs(r1)); err != nil {
		t.Fatal(err)
	}
	// r1 is in batch 1 already: batch 2 must not take it, nor r2.
	err := st.RecordIntent(ctx(t), batch(2), map[string]string{r2.ID: "a", r1.ID: "b"})
	if err == nil {
		t.Fatal("RecordIntent with a request that is not queued: no error")
	}
	checkRequest(t, s.get(t, st, r1.ID), with(r1, llmfleet.RequestSubmitted, batch(1).ID, "r0", nil))
	checkRequest(t, s.get(t, st, r2.ID), r2)
	_, pb := s.pending(t, st)
	if len(pb) != 1 || pb[0].Batch.ID != batch(1).ID {
		t.Fatalf("Pending after a failed intent: %d batches", len(pb))
	}
	// A done request cannot go into a batch either.
	if _, err := st.CompleteRequests(ctx(t), done(map[string]*llmfleet.StoredResult{r3.ID: errorResult()})); err != nil {
		t.Fatal(err)
	}
	if err := st.RecordIntent(ctx(t), batch(3), customIDs(r3)); err == nil {
		t.Error("RecordIntent with a done request: no error")
	}
	// The failed batch ids remain free.
	if err := st.RecordIntent(ctx(t), batch(2), customIDs(r2)); err != nil {
		t.Fatalf("RecordIntent after a failed one with the same id: %v", err)
	}
}

func (s *suite) createFailedRequeue(t *testing.T) {
	st := s.store(t)
	rs, b, _ := s.intended(t, st)
	if err := st.RecordCreateFailed(ctx(t), b.ID, true); err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		checkRequest(t, s.get(t, st, r.ID), r)
	}
	q, pb := s.pending(t, st)
	if fmt.Sprint(ids(q)) != fmt.Sprint(ids(rs)) || len(pb) != 0 {
		t.Fatalf("Pending after a requeued failure: queued %v, %d batches", ids(q), len(pb))
	}
	// They go out in the next batch.
	b2 := batch(2)
	if err := st.RecordIntent(ctx(t), b2, customIDs(rs...)); err != nil {
		t.Fatal(err)
	}
	if err := st.RecordCreated(ctx(t), b2.ID, "msgbatch_2", base.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	_, pb = s.pending(t, st)
	if len(pb) != 1 || pb[0].Batch.ID != b2.ID || len(pb[0].Requests) != 2 {
		t.Fatalf("Pending after the second batch: %d batches", len(pb))
	}
}

// createFailedNoRequeue: the requests stay submitted until the caller
// completes them with the error; the failed batch is not pending.
func (s *suite) createFailedNoRequeue(t *testing.T) {
	st := s.store(t)
	rs, b, cids := s.intended(t, st)
	if err := st.RecordCreateFailed(ctx(t), b.ID, false); err != nil {
		t.Fatal(err)
	}
	q, pb := s.pending(t, st)
	if len(q) != 0 || len(pb) != 0 {
		t.Fatalf("Pending after a failure: %d queued, %d batches, want none", len(q), len(pb))
	}
	for _, r := range rs {
		checkRequest(t, s.get(t, st, r.ID), with(r, llmfleet.RequestSubmitted, b.ID, cids[r.ID], nil))
	}
	res := map[string]*llmfleet.StoredResult{rs[0].ID: errorResult(), rs[1].ID: errorResult()}
	if _, err := st.CompleteRequests(ctx(t), done(res)); err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		checkRequest(t, s.get(t, st, r.ID), with(r, llmfleet.RequestDone, b.ID, cids[r.ID], errorResult()))
	}
}

// completeQueuedAndTwice: a request can be answered without a batch (say,
// refused), and an answer once stored never changes.
func (s *suite) completeQueuedAndTwice(t *testing.T) {
	st := s.store(t)
	r1, r2 := request(1), request(2)
	s.add(t, st, r1, r2)
	if _, err := st.CompleteRequests(ctx(t), done(map[string]*llmfleet.StoredResult{r1.ID: errorResult()})); err != nil {
		t.Fatal(err)
	}
	checkRequest(t, s.get(t, st, r1.ID), with(r1, llmfleet.RequestDone, "", "", errorResult()))
	q, _ := s.pending(t, st)
	if fmt.Sprint(ids(q)) != fmt.Sprint([]string{r2.ID}) {
		t.Errorf("Pending after completing a queued request: %v", ids(q))
	}
	if _, err := st.CompleteRequests(ctx(t), done(map[string]*llmfleet.StoredResult{r1.ID: result(1)})); err != nil {
		t.Fatalf("CompleteRequests of a done request: %v", err)
	}
	checkRequest(t, s.get(t, st, r1.ID), with(r1, llmfleet.RequestDone, "", "", errorResult()))
	if _, err := st.CompleteRequests(ctx(t), nil); err != nil {
		t.Errorf("CompleteRequests(nil): %v", err)
	}
}

func (s *suite) pendingOrder(t *testing.T) {
	st := s.store(t)
	order := []int{5, 1, 4, 2, 3}
	for _, i := range order {
		s.add(t, st, request(i))
	}
	for _, i := range []int{3, 1, 2} {
		r := request(10 + i)
		s.add(t, st, r)
		if err := st.RecordIntent(ctx(t), batch(i), customIDs(r)); err != nil {
			t.Fatal(err)
		}
	}
	q, pb := s.pending(t, st)
	if got := fmt.Sprint(ids(q)); got != "[lfr_0001 lfr_0002 lfr_0003 lfr_0004 lfr_0005]" {
		t.Errorf("queued order %s, want by AcceptedAt", got)
	}
	var bs []string
	for _, b := range pb {
		bs = append(bs, b.Batch.ID)
	}
	if got := fmt.Sprint(bs); got != "[lfb_0001 lfb_0002 lfb_0003]" {
		t.Errorf("batch order %s, want by IntentAt", got)
	}
}

// pendingAnswered: a batch's requests answered by another route (a
// rescue) are pending as Answered, for their paid results to be read and
// recorded late, an intent's too (its create may have landed); one
// answered by the batch itself is not.
func (s *suite) pendingAnswered(t *testing.T) {
	st := s.store(t)
	rs, b, _ := s.intended(t, st)
	rescued := result(1)
	if _, err := st.CompleteRequests(ctx(t), done(map[string]*llmfleet.StoredResult{rs[0].ID: rescued})); err != nil {
		t.Fatal(err)
	}
	if _, pb := s.pending(t, st); len(pb) != 1 || fmt.Sprint(ids(pb[0].Answered)) != "[lfr_0001]" || fmt.Sprint(ids(pb[0].Requests)) != "[lfr_0002]" {
		t.Fatalf("an intent's pending requests: %+v", pb)
	}
	if err := st.RecordCreated(ctx(t), b.ID, "msgbatch_1", base.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	own := result(2)
	own.BatchID = "msgbatch_1"
	if _, err := st.CompleteRequests(ctx(t), done(map[string]*llmfleet.StoredResult{rs[1].ID: own})); err != nil {
		t.Fatal(err)
	}
	_, pb := s.pending(t, st)
	if len(pb) != 1 || len(pb[0].Requests) != 0 || fmt.Sprint(ids(pb[0].Answered)) != "[lfr_0001]" {
		t.Fatalf("a created batch's answered requests: %+v", pb)
	}
}

// createFailedStale: a batch recorded created (found by its tag by
// another process) is not requeued: ErrStale, its requests stay
// submitted in it.
func (s *suite) createFailedStale(t *testing.T) {
	st := s.store(t)
	rs, b, cids := s.intended(t, st)
	if err := st.RecordCreated(ctx(t), b.ID, "msgbatch_1", base.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := st.RecordCreateFailed(ctx(t), b.ID, true); !errors.Is(err, llmfleet.ErrStale) {
		t.Fatalf("RecordCreateFailed(requeue) of a created batch: %v, want ErrStale", err)
	}
	for _, r := range rs {
		checkRequest(t, s.get(t, st, r.ID), with(r, llmfleet.RequestSubmitted, b.ID, cids[r.ID], nil))
	}
	if _, pb := s.pending(t, st); len(pb) != 1 || pb[0].Batch.State != llmfleet.BatchCreated {
		t.Fatalf("the batch after a stale requeue: %d pending", len(pb))
	}
}

// intended stores requests 1 and 2 and the intent of batch 1 holding
// them, and returns the requests, the batch and their custom ids.
func (s *suite) intended(t *testing.T, st llmfleet.Store) ([]*llmfleet.StoredRequest, *llmfleet.StoredBatch, map[string]string) {
	t.Helper()
	rs := []*llmfleet.StoredRequest{request(1), request(2)}
	s.add(t, st, rs...)
	b, cids := batch(1), customIDs(rs...)
	if err := st.RecordIntent(ctx(t), b, cids); err != nil {
		t.Fatal(err)
	}
	return rs, b, cids
}
