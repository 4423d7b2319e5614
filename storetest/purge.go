package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
)

// must fails t at once on err.
func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// purge sets up old and recent records of every kind and checks that
// Purge deletes exactly the old finished ones.
func (s *suite) purge(t *testing.T) {
	st := s.store(t)
	c := ctx(t)
	old, before, kept := s.purgeFixture(t, st)

	// The ledger is kept longer than the results: a first purge with an
	// older ledger cut leaves every entry.
	n, err := st.Purge(c, before, old.Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if n != 5 {
		t.Errorf("Purge deleted %d records, want 5 (3 requests, 2 batches, no ledger entry)", n)
	}
	if got, err := st.Ledger(c, old.Add(-time.Hour), base.Add(time.Hour)); err != nil || len(got) != 5 {
		t.Errorf("Ledger after a results-only purge: %d entries, %v; want 5", len(got), err)
	}
	n, err = st.Purge(c, before, before)
	if err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Errorf("Purge deleted %d records, want the 3 old ledger entries", n)
	}
	for _, id := range []string{"lfr_0001", "lfr_0002", "lfr_0005"} {
		_, err := st.GetRequest(c, id)
		isNotFound(t, "GetRequest of a purged request", err)
	}
	for _, id := range []string{"lfr_0003", "lfr_0004", "lfr_0006", "lfr_0007", "lfr_0008"} {
		s.get(t, st, id)
	}
	q, pb := s.pending(t, st)
	if fmt.Sprint(ids(q)) != "[lfr_0003 lfr_0007]" || len(pb) != 1 || pb[0].Batch.ID != kept.ID || len(pb[0].Requests) != 1 {
		t.Errorf("Pending after Purge: queued %v, %d batches", ids(q), len(pb))
	}
	got, err := st.Ledger(c, old.Add(-time.Hour), base.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	checkEntries(t, got, []llmfleet.LedgerEntry{entry(4, before), entry(5, base)})
	if _, err := st.GetCredential(c, "cred_old"); err != nil {
		t.Errorf("GetCredential after Purge: %v", err)
	}
	if n, err := st.Purge(c, before, before); n != 0 || err != nil {
		t.Errorf("second Purge = %d, %v; want 0", n, err)
	}
}

// purgeFixture records the purge test's old and recent records in st and
// returns when the old ones were made, the purge's cut, and the old
// created batch Purge must keep.
func (s *suite) purgeFixture(t *testing.T, st llmfleet.Store) (old, before time.Time, kept *llmfleet.StoredBatch) {
	c := ctx(t)
	old = base.Add(-40 * 24 * time.Hour)
	before = base.Add(-29 * 24 * time.Hour)
	oldReq := func(i int) *llmfleet.StoredRequest {
		r := request(i)
		r.AcceptedAt, r.Deadline = old.Add(time.Duration(i)*time.Millisecond), time.Time{}
		return r
	}
	oldRes := func(i int) *llmfleet.StoredResult {
		res := result(i)
		res.CompletedAt = old.Add(time.Hour)
		return res
	}
	// 1, 2: old, in an old resolved batch: deleted, with the batch (3).
	// 3: old, queued: kept. 4: old, in an old created batch: kept.
	// 5: old, refused while queued: deleted (4).
	// 6, 7: old, in a batch that failed and requeued them, then 6
	// answered recently: the batch goes (5); 6 and 7 stay.
	// 8: recent, done: kept.
	for i := 1; i <= 7; i++ {
		s.add(t, st, oldReq(i))
	}
	s.add(t, st, request(8))
	b1, b2, b3 := batch(1), batch(2), batch(3)
	b1.IntentAt, b2.IntentAt, b3.IntentAt = old, old, old
	must(t, st.RecordIntent(c, b1, map[string]string{"lfr_0001": "a", "lfr_0002": "b"}))
	must(t, st.RecordCreated(c, b1.ID, "msgbatch_1", old))
	must(t, st.RecordEnded(c, b1.ID, old.Add(time.Hour)))
	must(t, errOf(st.CompleteRequests(c, done(map[string]*llmfleet.StoredResult{"lfr_0001": oldRes(1), "lfr_0002": oldRes(2)}))))
	must(t, st.ResolveBatch(c, b1.ID))
	must(t, st.RecordIntent(c, b2, map[string]string{"lfr_0004": "a"}))
	must(t, st.RecordCreated(c, b2.ID, "msgbatch_2", old))
	must(t, errOf(st.CompleteRequests(c, done(map[string]*llmfleet.StoredResult{"lfr_0005": oldRes(5)}))))
	must(t, st.RecordIntent(c, b3, map[string]string{"lfr_0006": "a", "lfr_0007": "b"}))
	must(t, st.RecordCreateFailed(c, b3.ID, true))
	must(t, errOf(st.CompleteRequests(c, done(map[string]*llmfleet.StoredResult{"lfr_0006": result(6), "lfr_0008": result(8)}))))
	must(t, st.PutCredential(c, "cred_old", []byte("sealed")))
	// Ledger: three old entries (6, 7, 8), two recent ones.
	must(t, st.AddLedger(c, []llmfleet.LedgerEntry{entry(1, old), entry(2, old), entry(3, before.Add(-1)),
		entry(4, before), entry(5, base)}))
	return old, before, b2
}
