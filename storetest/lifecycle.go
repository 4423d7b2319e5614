package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
)

// lifecycle walks a batch through intent, created, ended, complete and
// resolve, checking what Pending returns at each step, a subtest each:
// what a restart would pick up had the process died there.
func (s *suite) lifecycle(t *testing.T) {
	w := &batchWalk{s: s, st: s.store(t), rs: []*llmfleet.StoredRequest{request(1), request(2), request(3)}, other: request(4)}
	s.add(t, w.st, append(w.rs, w.other)...)
	steps := []struct {
		name string
		fn   func(t *testing.T)
	}{
		{"Accepted", w.accepted},
		{"Intent", w.intent},
		{"Created", w.created},
		{"Ended", w.ended},
		{"PartialResults", w.partialResults},
		{"AllResults", w.allResults},
		{"Resolved", w.resolved},
	}
	for _, step := range steps {
		if !t.Run(step.name, step.fn) {
			return
		}
	}
}

// batchWalk is the state of the lifecycle test between its steps: the
// store, the batch's requests and one left out of it, the batch, and what
// Pending should say of it.
type batchWalk struct {
	s     *suite
	st    llmfleet.Store
	rs    []*llmfleet.StoredRequest
	other *llmfleet.StoredRequest
	b     *llmfleet.StoredBatch
	cids  map[string]string
	want  llmfleet.StoredBatch
	sub   []*llmfleet.StoredRequest // rs as submitted in the batch
}

// onePending checks that Pending lists the one batch, as w.want, with
// reqs still to answer.
func (w *batchWalk) onePending(t *testing.T, what string, reqs ...*llmfleet.StoredRequest) {
	t.Helper()
	_, pb := w.s.pending(t, w.st)
	if len(pb) != 1 {
		t.Fatalf("Pending after %s: %d batches", what, len(pb))
	}
	checkPendingBatch(t, pb[0], w.want, reqs...)
}

// accepted is crash point 1: accepted, not yet in a batch.
func (w *batchWalk) accepted(t *testing.T) {
	q, pb := w.s.pending(t, w.st)
	if fmt.Sprint(ids(q)) != fmt.Sprint(ids(append(w.rs, w.other))) || len(pb) != 0 {
		t.Fatalf("Pending after adds: queued %v, %d batches", ids(q), len(pb))
	}
}

// intent is crash point 2: intent recorded, create call under way.
func (w *batchWalk) intent(t *testing.T) {
	b := batch(1)
	b.Size = 99              // the store counts the requests itself
	b.UpstreamID = "ignored" // not known at intent time
	b.State = llmfleet.BatchState("bogus")
	w.b, w.cids = b, customIDs(w.rs...)
	if err := w.st.RecordIntent(ctx(t), b, w.cids); err != nil {
		t.Fatal(err)
	}
	w.want = llmfleet.StoredBatch{ID: b.ID, Provider: b.Provider, CredentialID: b.CredentialID,
		State: llmfleet.BatchIntent, Size: 3, IntentAt: b.IntentAt, CreateDeadline: b.CreateDeadline}
	w.sub = make([]*llmfleet.StoredRequest, len(w.rs))
	for i, r := range w.rs {
		w.sub[i] = with(r, llmfleet.RequestSubmitted, b.ID, w.cids[r.ID], nil)
		checkRequest(t, w.s.get(t, w.st, r.ID), w.sub[i])
	}
	q, pb := w.s.pending(t, w.st)
	if fmt.Sprint(ids(q)) != fmt.Sprint([]string{w.other.ID}) || len(pb) != 1 {
		t.Fatalf("Pending after intent: queued %v, %d batches", ids(q), len(pb))
	}
	checkPendingBatch(t, pb[0], w.want, w.sub...)
}

// created is crash point 3: the provider accepted the batch.
func (w *batchWalk) created(t *testing.T) {
	created := base.Add(time.Hour + 1500*time.Millisecond)
	if err := w.st.RecordCreated(ctx(t), w.b.ID, "msgbatch_01abc", created); err != nil {
		t.Fatal(err)
	}
	w.want.State, w.want.UpstreamID, w.want.CreatedAt = llmfleet.BatchCreated, "msgbatch_01abc", created
	w.onePending(t, "created", w.sub...)
}

// ended is crash point 4: the provider reported the batch ended.
func (w *batchWalk) ended(t *testing.T) {
	ended := base.Add(90 * time.Minute)
	if err := w.st.RecordEnded(ctx(t), w.b.ID, ended); err != nil {
		t.Fatal(err)
	}
	w.want.EndedAt = ended
	w.onePending(t, "ended", w.sub...)
}

// partialResults is crash point 5: some results stored.
func (w *batchWalk) partialResults(t *testing.T) {
	rs := w.rs
	if _, err := w.st.CompleteRequests(ctx(t), done(map[string]*llmfleet.StoredResult{rs[0].ID: result(1), rs[2].ID: errorResult()})); err != nil {
		t.Fatal(err)
	}
	checkRequest(t, w.s.get(t, w.st, rs[0].ID), with(rs[0], llmfleet.RequestDone, w.b.ID, w.cids[rs[0].ID], result(1)))
	checkRequest(t, w.s.get(t, w.st, rs[2].ID), with(rs[2], llmfleet.RequestDone, w.b.ID, w.cids[rs[2].ID], errorResult()))
	w.onePending(t, "partial results", w.sub[1])
}

// allResults is crash point 6: every result stored, batch not resolved
// yet.
func (w *batchWalk) allResults(t *testing.T) {
	if _, err := w.st.CompleteRequests(ctx(t), done(map[string]*llmfleet.StoredResult{w.rs[1].ID: result(2)})); err != nil {
		t.Fatal(err)
	}
	w.onePending(t, "all results")
}

// resolved: nothing left to pick up but the other request.
func (w *batchWalk) resolved(t *testing.T) {
	if err := w.st.ResolveBatch(ctx(t), w.b.ID); err != nil {
		t.Fatal(err)
	}
	q, pb := w.s.pending(t, w.st)
	if fmt.Sprint(ids(q)) != fmt.Sprint([]string{w.other.ID}) || len(pb) != 0 {
		t.Fatalf("Pending after resolve: queued %v, %d batches", ids(q), len(pb))
	}
	checkRequest(t, w.s.get(t, w.st, w.rs[1].ID), with(w.rs[1], llmfleet.RequestDone, w.b.ID, w.cids[w.rs[1].ID], result(2)))
	checkRequest(t, w.s.get(t, w.st, w.other.ID), w.other)
}
