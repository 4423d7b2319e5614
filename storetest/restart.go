package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
)

// restart leaves a record at every crash point, reopens the store and
// checks that a restart finds each where it was; then it finishes the work
// on the reopened store and reopens it again.
func (s *suite) restart(t *testing.T) {
	if s.h.Reopen == nil {
		t.Skip("Harness.Reopen is nil")
	}
	st := s.store(t)
	c := ctx(t)
	bs, ledger := s.restartFixture(t, st)
	b1, b2, b4 := bs[0], bs[1], bs[3]

	st = s.reopened(t, st)
	s.checkRestarted(t, st, bs, ledger)

	// The restart picks the work up where it was.
	must(t, st.RecordCreated(c, b1.ID, "msgbatch_1", base.Add(time.Hour)))
	must(t, errOf(st.CompleteRequests(c, done(map[string]*llmfleet.StoredResult{"lfr_0003": result(3), "lfr_0004": result(4),
		"lfr_0006": result(6), "lfr_0008": errorResult()}))))
	must(t, st.ResolveBatch(c, b1.ID))
	must(t, st.ResolveBatch(c, b2.ID))
	b5 := batch(5)
	must(t, st.RecordIntent(c, b5, map[string]string{"lfr_0001": "a", "lfr_0002": "b"}))
	s.add(t, st, request(9))

	st = s.reopened(t, st)
	q, pb := s.pending(t, st)
	if fmt.Sprint(ids(q)) != "[lfr_0009]" || len(pb) != 1 || pb[0].Batch.ID != b5.ID || len(pb[0].Requests) != 2 {
		t.Errorf("Pending after the second reopen: queued %v, %d batches", ids(q), len(pb))
	}
	checkRequest(t, s.get(t, st, "lfr_0008"), with(request(8), llmfleet.RequestDone, b4.ID, "a", errorResult()))
}

// restartFixture leaves in st a record at every crash point and returns
// its four batches and its ledger entries.
func (s *suite) restartFixture(t *testing.T, st llmfleet.Store) ([4]*llmfleet.StoredBatch, []llmfleet.LedgerEntry) {
	c := ctx(t)
	for i := 1; i <= 8; i++ {
		s.add(t, st, request(i))
	}
	// 1, 2 queued. 3, 4 in batch 1, intent only.
	b1 := batch(1)
	must(t, st.RecordIntent(c, b1, map[string]string{"lfr_0003": "a", "lfr_0004": "b"}))
	// 5, 6 in batch 2, created and ended, 5 answered.
	b2 := batch(2)
	must(t, st.RecordIntent(c, b2, map[string]string{"lfr_0005": "a", "lfr_0006": "b"}))
	must(t, st.RecordCreated(c, b2.ID, "msgbatch_2", base.Add(time.Hour)))
	must(t, st.RecordEnded(c, b2.ID, base.Add(2*time.Hour)))
	must(t, errOf(st.CompleteRequests(c, done(map[string]*llmfleet.StoredResult{"lfr_0005": result(5)}))))
	// 7 in batch 3, resolved.
	b3 := batch(3)
	must(t, st.RecordIntent(c, b3, map[string]string{"lfr_0007": "a"}))
	must(t, st.RecordCreated(c, b3.ID, "msgbatch_3", base.Add(time.Hour)))
	must(t, errOf(st.CompleteRequests(c, done(map[string]*llmfleet.StoredResult{"lfr_0007": result(7)}))))
	must(t, st.ResolveBatch(c, b3.ID))
	// 8 in batch 4, whose create failed; not requeued, not answered yet.
	b4 := batch(4)
	must(t, st.RecordIntent(c, b4, map[string]string{"lfr_0008": "a"}))
	must(t, st.RecordCreateFailed(c, b4.ID, false))
	must(t, st.PutCredential(c, "cred_a", []byte("sealed")))
	ledger := []llmfleet.LedgerEntry{entry(1, base), entry(2, base.Add(time.Second))}
	must(t, st.AddLedger(c, ledger))
	return [4]*llmfleet.StoredBatch{b1, b2, b3, b4}, ledger
}

// checkRestarted checks that the reopened st finds each record of
// restartFixture where it was.
func (s *suite) checkRestarted(t *testing.T, st llmfleet.Store, bs [4]*llmfleet.StoredBatch, ledger []llmfleet.LedgerEntry) {
	t.Helper()
	b1, b2, b3, b4 := bs[0], bs[1], bs[2], bs[3]
	q, pb := s.pending(t, st)
	if fmt.Sprint(ids(q)) != "[lfr_0001 lfr_0002]" {
		t.Errorf("queued after reopen: %v", ids(q))
	}
	for i, r := range q {
		checkRequest(t, r, request(i+1))
	}
	if len(pb) != 2 {
		t.Fatalf("%d pending batches after reopen, want 2", len(pb))
	}
	checkPendingBatch(t, pb[0], llmfleet.StoredBatch{ID: b1.ID, Provider: b1.Provider, CredentialID: b1.CredentialID,
		State: llmfleet.BatchIntent, Size: 2, IntentAt: b1.IntentAt, CreateDeadline: b1.CreateDeadline},
		with(request(3), llmfleet.RequestSubmitted, b1.ID, "a", nil),
		with(request(4), llmfleet.RequestSubmitted, b1.ID, "b", nil))
	checkPendingBatch(t, pb[1], llmfleet.StoredBatch{ID: b2.ID, Provider: b2.Provider, CredentialID: b2.CredentialID,
		UpstreamID: "msgbatch_2", State: llmfleet.BatchCreated, Size: 2, IntentAt: b2.IntentAt,
		CreatedAt: base.Add(time.Hour), EndedAt: base.Add(2 * time.Hour), CreateDeadline: b2.CreateDeadline},
		with(request(6), llmfleet.RequestSubmitted, b2.ID, "b", nil))
	checkRequest(t, s.get(t, st, "lfr_0005"), with(request(5), llmfleet.RequestDone, b2.ID, "a", result(5)))
	checkRequest(t, s.get(t, st, "lfr_0007"), with(request(7), llmfleet.RequestDone, b3.ID, "a", result(7)))
	checkRequest(t, s.get(t, st, "lfr_0008"), with(request(8), llmfleet.RequestSubmitted, b4.ID, "a", nil))
	if got, err := st.GetCredential(ctx(t), "cred_a"); err != nil || string(got) != "sealed" {
		t.Errorf("GetCredential after reopen = %q, %v", got, err)
	}
	got, err := st.Ledger(ctx(t), base, base.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	checkEntries(t, got, ledger)
}
