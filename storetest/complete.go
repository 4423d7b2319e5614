package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
)

// completion returns the completion of request i with res and, if e is
// not nil, its ledger entry.
func completion(i int, res *llmfleet.StoredResult, e *llmfleet.LedgerEntry) llmfleet.Completion {
	return llmfleet.Completion{RequestID: fmt.Sprintf("lfr_%04d", i), Result: res, Ledger: e}
}

// ledgerEntry returns the ledger entry of request i (i%3 != 0), answered
// at base+i min, with outcome.
func ledgerEntry(i int, outcome string) *llmfleet.LedgerEntry {
	e := entry(i, base.Add(time.Duration(i)*time.Minute))
	e.Outcome = outcome
	return &e
}

// allLedger returns every ledger entry of the suite's times.
func (s *suite) allLedger(t *testing.T, st llmfleet.Store) []llmfleet.LedgerEntry {
	t.Helper()
	got, err := st.Ledger(ctx(t), base.Add(-time.Hour), base.Add(24*time.Hour))
	if err != nil {
		t.Fatalf("Ledger: %v", err)
	}
	return got
}

// completeWithLedger: the ledger entries given with completions are
// written with them; a completion without one writes none.
func (s *suite) completeWithLedger(t *testing.T) {
	st := s.store(t)
	s.add(t, st, request(1), request(2), request(4))
	e1, e2 := ledgerEntry(1, "ok"), ledgerEntry(2, "overloaded_error")
	_, err := st.CompleteRequests(ctx(t), []llmfleet.Completion{
		completion(2, errorResult(), e2), completion(1, result(1), e1), completion(4, result(4), nil)})
	if err != nil {
		t.Fatal(err)
	}
	checkEntries(t, s.allLedger(t, st), []llmfleet.LedgerEntry{*e1, *e2})
	got, err := st.Ledger(ctx(t), e2.Time, e2.Time.Add(time.Nanosecond))
	if err != nil {
		t.Fatal(err)
	}
	checkEntries(t, got, []llmfleet.LedgerEntry{*e2})
	checkRequest(t, s.get(t, st, "lfr_0001"), with(request(1), llmfleet.RequestDone, "", "", result(1)))
	checkRequest(t, s.get(t, st, "lfr_0002"), with(request(2), llmfleet.RequestDone, "", "", errorResult()))
	checkRequest(t, s.get(t, st, "lfr_0004"), with(request(4), llmfleet.RequestDone, "", "", result(4)))
}

// completeOnce: completing a request that is done, by an earlier call or
// earlier in the same call, keeps its first result and writes no second
// ledger entry, while the other requests of the call are completed.
func (s *suite) completeOnce(t *testing.T) {
	st := s.store(t)
	s.add(t, st, request(1), request(2), request(4))
	e1 := ledgerEntry(1, "ok")
	if _, err := st.CompleteRequests(ctx(t), []llmfleet.Completion{completion(1, result(1), e1)}); err != nil {
		t.Fatal(err)
	}
	e2, e4 := ledgerEntry(2, "ok"), ledgerEntry(4, "ok")
	kept, err := st.CompleteRequests(ctx(t), []llmfleet.Completion{
		completion(1, errorResult(), ledgerEntry(1, "retried")),
		completion(2, result(2), e2),
		completion(4, result(4), e4),
		completion(4, errorResult(), ledgerEntry(4, "duplicate")),
	})
	if err != nil {
		t.Fatalf("CompleteRequests with done requests: %v", err)
	}
	if fmt.Sprint(kept) != "[false true true false]" {
		t.Errorf("CompleteRequests kept %v, want [false true true false]: only the completions of requests not done yet, once each", kept)
	}
	checkEntries(t, s.allLedger(t, st), []llmfleet.LedgerEntry{*e1, *e2, *e4})
	for _, i := range []int{1, 2, 4} {
		checkRequest(t, s.get(t, st, fmt.Sprintf("lfr_%04d", i)), with(request(i), llmfleet.RequestDone, "", "", result(i)))
	}
}

// completeUnknown: a call naming an unknown request fails with ErrNotFound
// and stores nothing: no result, no ledger entry.
func (s *suite) completeUnknown(t *testing.T) {
	st := s.store(t)
	s.add(t, st, request(1), request(2))
	before := ledgerEntry(5, "ok")
	if err := st.AddLedger(ctx(t), []llmfleet.LedgerEntry{*before}); err != nil {
		t.Fatal(err)
	}
	_, err := st.CompleteRequests(ctx(t), []llmfleet.Completion{
		completion(1, result(1), ledgerEntry(1, "ok")),
		{RequestID: "lfr_unknown", Result: result(7), Ledger: ledgerEntry(7, "ok")},
		completion(2, result(2), ledgerEntry(2, "ok")),
	})
	isNotFound(t, "CompleteRequests with an unknown id", err)
	checkRequest(t, s.get(t, st, "lfr_0001"), request(1))
	checkRequest(t, s.get(t, st, "lfr_0002"), request(2))
	checkEntries(t, s.allLedger(t, st), []llmfleet.LedgerEntry{*before})
	q, _ := s.pending(t, st)
	if len(q) != 2 {
		t.Errorf("Pending after a failed CompleteRequests: %d queued, want 2", len(q))
	}
}

// completeConcurrentOnce: callers racing to complete one request leave it
// one result and one ledger entry, both from the same caller.
func (s *suite) completeConcurrentOnce(t *testing.T) {
	st := s.store(t)
	s.add(t, st, request(1))
	const callers = 8
	var wg sync.WaitGroup
	var mu sync.Mutex
	winners := 0
	for g := range callers {
		wg.Go(func() {
			c := completion(1, result(10+g), ledgerEntry(1, fmt.Sprintf("caller %d", g)))
			kept, err := st.CompleteRequests(ctx(t), []llmfleet.Completion{c})
			if err != nil {
				t.Errorf("caller %d: CompleteRequests: %v", g, err)
				return
			}
			if len(kept) != 1 {
				t.Errorf("caller %d: kept %v for one completion", g, kept)
				return
			}
			mu.Lock()
			if kept[0] {
				winners++
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	if winners != 1 {
		t.Errorf("%d racing callers were told their completion was kept, want 1", winners)
	}
	got := s.allLedger(t, st)
	if len(got) != 1 {
		t.Fatalf("Ledger after %d racing completions: %d entries, want 1", callers, len(got))
	}
	var g int
	if _, err := fmt.Sscanf(got[0].Outcome, "caller %d", &g); err != nil {
		t.Fatalf("ledger entry outcome %q: %v", got[0].Outcome, err)
	}
	checkEntries(t, got, []llmfleet.LedgerEntry{*ledgerEntry(1, got[0].Outcome)})
	checkRequest(t, s.get(t, st, "lfr_0001"), with(request(1), llmfleet.RequestDone, "", "", result(10+g)))
}

// completeConcurrentOverlap: calls completing the same requests in
// opposite orders, at once, all succeed (none is chosen to fail, as a
// deadlock would), and each request keeps one result and one entry.
func (s *suite) completeConcurrentOverlap(t *testing.T) {
	st := s.store(t)
	const n = 24
	var rs []*llmfleet.StoredRequest
	for i := 1; i <= n; i++ {
		rs = append(rs, request(i))
	}
	s.add(t, st, rs...)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			var cs []llmfleet.Completion
			for k := range n {
				i := k + 1
				if g%2 == 1 {
					i = n - k // the other way round
				}
				cs = append(cs, completion(i, result(i), ledgerEntry(i, fmt.Sprintf("caller %d", g))))
			}
			if _, err := st.CompleteRequests(ctx(t), cs); err != nil {
				t.Errorf("caller %d: CompleteRequests: %v", g, err)
			}
		})
	}
	wg.Wait()
	got := s.allLedger(t, st)
	if len(got) != n {
		t.Errorf("Ledger after overlapping completions: %d entries, want %d", len(got), n)
	}
	for i := 1; i <= n; i++ {
		checkRequest(t, s.get(t, st, fmt.Sprintf("lfr_%04d", i)), with(request(i), llmfleet.RequestDone, "", "", result(i)))
	}
}

// errOf returns the error of a CompleteRequests call.
func errOf(_ []bool, err error) error { return err }
