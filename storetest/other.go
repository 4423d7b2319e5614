package storetest

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
)

func (s *suite) credentials(t *testing.T) {
	st := s.store(t)
	first := []byte{0x01, 0x00, 0xff, 's', 'e', 'a', 'l', 'e', 'd'}
	if err := st.PutCredential(ctx(t), "cred_a", first); err != nil {
		t.Fatal(err)
	}
	if err := st.PutCredential(ctx(t), "cred_a", []byte("other")); err != nil {
		t.Fatalf("second PutCredential: %v", err)
	}
	if err := st.PutCredential(ctx(t), "cred_b", []byte("b")); err != nil {
		t.Fatal(err)
	}
	got, err := st.GetCredential(ctx(t), "cred_a")
	if err != nil || string(got) != string(first) {
		t.Errorf("GetCredential(cred_a) = %q, %v; want the first one put, %q", got, err, first)
	}
	got, err = st.GetCredential(ctx(t), "cred_b")
	if err != nil || string(got) != "b" {
		t.Errorf("GetCredential(cred_b) = %q, %v", got, err)
	}
	_, err = st.GetCredential(ctx(t), "cred_c")
	isNotFound(t, "GetCredential", err)
}

// entry returns a ledger entry numbered i at time at.
func entry(i int, at time.Time) llmfleet.LedgerEntry {
	e := llmfleet.LedgerEntry{
		RequestID:     fmt.Sprintf("lfr_%04d", i),
		Time:          at,
		Provider:      "anthropic",
		Model:         "claude-sonnet-4-6",
		Route:         llmfleet.RouteBatch,
		Outcome:       "ok",
		CostUSD:       0.0015 * float64(i+1),
		OtherRouteUSD: 0.003 * float64(i+1),
		Priced:        true,
		Queued:        time.Duration(i) * time.Second,
		Turnaround:    3*time.Minute + time.Duration(i),
		Latency:       4*time.Minute + time.Duration(i),
		Budget:        time.Hour,
		BudgetMet:     i%2 == 0,
		Client:        fmt.Sprintf("client-%d", i%3),
	}
	e.Usage = result(i).Usage
	e.BatchID = fmt.Sprintf("msgbatch_%d", i/2)
	switch i % 4 {
	case 1:
		e.Rescue = llmfleet.RescueSync
	case 2:
		e.Rescue = llmfleet.RescueLate
	}
	if i%3 == 0 {
		e.BatchID = ""
		e.RequestID, e.Route, e.Outcome, e.Priced, e.CostUSD, e.OtherRouteUSD = "", llmfleet.RouteSync, "rate_limit_error", false, 0, 0
	}
	if i%4 == 3 { // a batched turn that wrote what the sync cache held, its TTLs raised
		e.MissUSD, e.Rewrite = 0.0004*float64(i), llmfleet.RewriteTTL1h
	}
	if i == 6 { // a sync call cut before its usage came
		e.Estimated = true
	}
	if i%5 == 4 {
		// A flex call the provider served in its standard tier.
		e.BatchID, e.Route, e.Tier = "", llmfleet.RouteFlex, llmfleet.TierStandard
	}
	return e
}

func checkEntries(t *testing.T, got, want []llmfleet.LedgerEntry) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("Ledger: %d entries, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if !g.Time.Equal(w.Time) {
			t.Errorf("entry %d: Time %v, want %v", i, g.Time, w.Time)
		}
		g.Time, w.Time = time.Time{}, time.Time{}
		if !reflect.DeepEqual(g, w) {
			t.Errorf("entry %d:\n got %+v\nwant %+v", i, g, w)
		}
	}
}

func (s *suite) ledger(t *testing.T) {
	st := s.store(t)
	var all []llmfleet.LedgerEntry
	for i := range 10 {
		all = append(all, entry(i, base.Add(time.Duration(i)*time.Minute)))
	}
	// Added out of order, in two calls.
	if err := st.AddLedger(ctx(t), []llmfleet.LedgerEntry{all[7], all[2], all[9], all[0], all[5]}); err != nil {
		t.Fatal(err)
	}
	if err := st.AddLedger(ctx(t), []llmfleet.LedgerEntry{all[1], all[3], all[4], all[6], all[8]}); err != nil {
		t.Fatal(err)
	}
	if err := st.AddLedger(ctx(t), nil); err != nil {
		t.Errorf("AddLedger(nil): %v", err)
	}
	got, err := st.Ledger(ctx(t), base, base.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	checkEntries(t, got, all)
	// Many in one call (a group commit), some at one time: kept whole, in
	// the order given.
	var many []llmfleet.LedgerEntry
	for i := range 203 {
		many = append(many, entry(100+i, base.Add(2*time.Hour+time.Duration(i/5)*time.Second)))
	}
	if err := st.AddLedger(ctx(t), many); err != nil {
		t.Fatal(err)
	}
	got, err = st.Ledger(ctx(t), base.Add(2*time.Hour), base.Add(3*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	checkEntries(t, got, many)
	// [from, to): from is in, to is out.
	got, err = st.Ledger(ctx(t), base.Add(2*time.Minute), base.Add(5*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	checkEntries(t, got, all[2:5])
	got, err = st.Ledger(ctx(t), base.Add(-time.Hour), base)
	if err != nil || len(got) != 0 {
		t.Errorf("Ledger before the first entry: %d entries, %v", len(got), err)
	}
}

// purge sets up old and recent records of every kind and checks that
// Purge deletes exactly the old finished ones.
func (s *suite) purge(t *testing.T) {
	st := s.store(t)
	c := ctx(t)
	old := base.Add(-40 * 24 * time.Hour)
	before := base.Add(-29 * 24 * time.Hour)
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
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	b1, b2, b3 := batch(1), batch(2), batch(3)
	b1.IntentAt, b2.IntentAt, b3.IntentAt = old, old, old
	must(st.RecordIntent(c, b1, map[string]string{"lfr_0001": "a", "lfr_0002": "b"}))
	must(st.RecordCreated(c, b1.ID, "msgbatch_1", old))
	must(st.RecordEnded(c, b1.ID, old.Add(time.Hour)))
	must(errOf(st.CompleteRequests(c, done(map[string]*llmfleet.StoredResult{"lfr_0001": oldRes(1), "lfr_0002": oldRes(2)}))))
	must(st.ResolveBatch(c, b1.ID))
	must(st.RecordIntent(c, b2, map[string]string{"lfr_0004": "a"}))
	must(st.RecordCreated(c, b2.ID, "msgbatch_2", old))
	must(errOf(st.CompleteRequests(c, done(map[string]*llmfleet.StoredResult{"lfr_0005": oldRes(5)}))))
	must(st.RecordIntent(c, b3, map[string]string{"lfr_0006": "a", "lfr_0007": "b"}))
	must(st.RecordCreateFailed(c, b3.ID, true))
	must(errOf(st.CompleteRequests(c, done(map[string]*llmfleet.StoredResult{"lfr_0006": result(6), "lfr_0008": result(8)}))))
	must(st.PutCredential(c, "cred_old", []byte("sealed")))
	// Ledger: three old entries (6, 7, 8), two recent ones.
	must(st.AddLedger(c, []llmfleet.LedgerEntry{entry(1, old), entry(2, old), entry(3, before.Add(-1)),
		entry(4, before), entry(5, base)}))

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
	if fmt.Sprint(ids(q)) != "[lfr_0003 lfr_0007]" || len(pb) != 1 || pb[0].Batch.ID != b2.ID || len(pb[0].Requests) != 1 {
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

// restart leaves a record at every crash point, reopens the store and
// checks that a restart finds each where it was; then it finishes the work
// on the reopened store and reopens it again.
func (s *suite) restart(t *testing.T) {
	if s.h.Reopen == nil {
		t.Skip("Harness.Reopen is nil")
	}
	st := s.store(t)
	c := ctx(t)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := 1; i <= 8; i++ {
		s.add(t, st, request(i))
	}
	// 1, 2 queued. 3, 4 in batch 1, intent only.
	b1 := batch(1)
	must(st.RecordIntent(c, b1, map[string]string{"lfr_0003": "a", "lfr_0004": "b"}))
	// 5, 6 in batch 2, created and ended, 5 answered.
	b2 := batch(2)
	must(st.RecordIntent(c, b2, map[string]string{"lfr_0005": "a", "lfr_0006": "b"}))
	must(st.RecordCreated(c, b2.ID, "msgbatch_2", base.Add(time.Hour)))
	must(st.RecordEnded(c, b2.ID, base.Add(2*time.Hour)))
	must(errOf(st.CompleteRequests(c, done(map[string]*llmfleet.StoredResult{"lfr_0005": result(5)}))))
	// 7 in batch 3, resolved.
	b3 := batch(3)
	must(st.RecordIntent(c, b3, map[string]string{"lfr_0007": "a"}))
	must(st.RecordCreated(c, b3.ID, "msgbatch_3", base.Add(time.Hour)))
	must(errOf(st.CompleteRequests(c, done(map[string]*llmfleet.StoredResult{"lfr_0007": result(7)}))))
	must(st.ResolveBatch(c, b3.ID))
	// 8 in batch 4, whose create failed; not requeued, not answered yet.
	b4 := batch(4)
	must(st.RecordIntent(c, b4, map[string]string{"lfr_0008": "a"}))
	must(st.RecordCreateFailed(c, b4.ID, false))
	must(st.PutCredential(c, "cred_a", []byte("sealed")))
	ledger := []llmfleet.LedgerEntry{entry(1, base), entry(2, base.Add(time.Second))}
	must(st.AddLedger(c, ledger))

	st = s.reopened(t, st)
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
	if got, err := st.GetCredential(c, "cred_a"); err != nil || string(got) != "sealed" {
		t.Errorf("GetCredential after reopen = %q, %v", got, err)
	}
	got, err := st.Ledger(c, base, base.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	checkEntries(t, got, ledger)

	// The restart picks the work up where it was.
	must(st.RecordCreated(c, b1.ID, "msgbatch_1", base.Add(time.Hour)))
	must(errOf(st.CompleteRequests(c, done(map[string]*llmfleet.StoredResult{"lfr_0003": result(3), "lfr_0004": result(4),
		"lfr_0006": result(6), "lfr_0008": errorResult()}))))
	must(st.ResolveBatch(c, b1.ID))
	must(st.ResolveBatch(c, b2.ID))
	b5 := batch(5)
	must(st.RecordIntent(c, b5, map[string]string{"lfr_0001": "a", "lfr_0002": "b"}))
	s.add(t, st, request(9))

	st = s.reopened(t, st)
	q, pb = s.pending(t, st)
	if fmt.Sprint(ids(q)) != "[lfr_0009]" || len(pb) != 1 || pb[0].Batch.ID != b5.ID || len(pb[0].Requests) != 2 {
		t.Errorf("Pending after the second reopen: queued %v, %d batches", ids(q), len(pb))
	}
	checkRequest(t, s.get(t, st, "lfr_0008"), with(request(8), llmfleet.RequestDone, b4.ID, "a", errorResult()))
}

// reopen: an empty store reopens empty, and accepts writes after.
func (s *suite) reopen(t *testing.T) {
	if s.h.Reopen == nil {
		t.Skip("Harness.Reopen is nil")
	}
	st := s.reopened(t, s.store(t))
	q, pb := s.pending(t, st)
	if len(q) != 0 || len(pb) != 0 {
		t.Fatalf("a reopened empty store has %d queued, %d batches", len(q), len(pb))
	}
	s.add(t, st, request(1))
	st = s.reopened(t, st)
	checkRequest(t, s.get(t, st, "lfr_0001"), request(1))
}

func (s *suite) reopened(t *testing.T, old llmfleet.Store) llmfleet.Store {
	t.Helper()
	st := s.h.Reopen(t, old)
	if st == nil {
		t.Fatal("Harness.Reopen returned nil")
	}
	return st
}
