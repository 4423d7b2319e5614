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
