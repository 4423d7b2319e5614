package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
)

// SharedHarness tells RunShared how to get the processes of a fleet
// sharing one store.
type SharedHarness struct {
	// New returns n stores on one fresh, empty fleet's data, as n
	// processes would open them; they are closed through t.Cleanup.
	// Required.
	New func(t *testing.T, n int) []llmfleet.SharedStore
}

// RunShared runs the contract suite of llmfleet.SharedStore: beyond its
// doc comments, it pins down that
//   - Claim takes a pool's queued requests oldest first, whichever
//     process accepted them, never one of another pool nor one accepted
//     after the cutoff, and numbers their custom_ids from 1; a
//     claim of an empty pool records no batch;
//   - concurrent claims of one pool, from several processes, claim each
//     request once;
//   - Adopt takes nothing a live process owns; once a process's lease
//     ends (Heartbeat 0), another adopts its queued requests and its
//     batches with their submitted requests, and its requests sent sync,
//     once; the ended process's next Heartbeat reports that it had ended
//     and makes it a new owner, which adopts what the ended one still
//     owned;
//   - RecordCreated refuses (ErrStale) a batch another live process owns
//     or one no longer in flight, and takes one whose owner's lease ended;
//   - Watch announces the requests another process completed;
//   - GetRequests returns what GetRequest would of each id it holds,
//     result included, and leaves unknown ids out;
//   - the prompt-cache statistics and prefixes are the fleet's: one
//     process sees what another added and put, and counts added at once
//     by several processes add up exactly.
func RunShared(t *testing.T, h SharedHarness) {
	t.Helper()
	if h.New == nil {
		t.Fatal("storetest: SharedHarness.New is nil")
	}
	s := &sharedSuite{h: h}
	t.Run("Claim", s.claim)
	t.Run("ClaimConcurrent", s.claimConcurrent)
	t.Run("Adopt", s.adopt)
	t.Run("RecordCreated", s.recordCreated)
	t.Run("Watch", s.watch)
	t.Run("GetRequests", s.getRequests)
	t.Run("Cache", s.cache)
}

type sharedSuite struct{ h SharedHarness }

func (s *sharedSuite) stores(t *testing.T, n int) []llmfleet.SharedStore {
	t.Helper()
	sts := s.h.New(t, n)
	if len(sts) != n {
		t.Fatalf("SharedHarness.New returned %d stores, want %d", len(sts), n)
	}
	return sts
}

// pooled returns request i in pool p.
func pooled(i int, p string) *llmfleet.StoredRequest {
	r := request(i)
	r.Pool = p
	return r
}

func addTo(t *testing.T, st llmfleet.Store, rs ...*llmfleet.StoredRequest) {
	t.Helper()
	for _, r := range rs {
		if err := st.AddRequest(ctx(t), r); err != nil {
			t.Fatalf("AddRequest(%s): %v", r.ID, err)
		}
	}
}

// later is after every request's acceptance: no cutoff.
var later = base.Add(24 * time.Hour)

func (s *sharedSuite) claim(t *testing.T) {
	sts := s.stores(t, 2)
	a, b := sts[0], sts[1]
	sync0 := pooled(0, "p1") // sent sync: never claimed
	sync0.State = llmfleet.RequestSubmitted
	addTo(t, a, sync0, pooled(1, "p1"), pooled(3, "p1"), pooled(4, "p2"))
	addTo(t, b, pooled(2, "p1"), pooled(5, "p1"))
	const big = 1 << 40
	got, err := a.Claim(ctx(t), batch(1), "p1", later, 2, big)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(ids(got)) != "[lfr_0001 lfr_0002]" {
		t.Fatalf("first claim: %v, want the two oldest of the pool", ids(got))
	}
	for i, r := range got {
		want := fmt.Sprintf("%s-%d", batch(1).ID, i+1)
		if r.State != llmfleet.RequestSubmitted || r.BatchID != batch(1).ID || r.CustomID != want {
			t.Errorf("claimed %s: state %s, batch %s, custom_id %s; want submitted, %s, %s", r.ID, r.State, r.BatchID, r.CustomID, batch(1).ID, want)
		}
		if !slices.Equal(r.Body, request(i+1).Body) {
			t.Errorf("claimed %s: body changed", r.ID)
		}
	}
	// Requests accepted after the cutoff wait for a later claim.
	got, err = b.Claim(ctx(t), batch(5), "p1", request(5).AcceptedAt.Add(-time.Nanosecond), 10, big)
	if err != nil || fmt.Sprint(ids(got)) != "[lfr_0003]" {
		t.Fatalf("claim before lfr_0005's acceptance: %v, %v; want lfr_0003 alone", ids(got), err)
	}
	// The byte cap lets the first through whatever its size.
	addTo(t, a, pooled(6, "p1"), pooled(7, "p1"))
	got, err = b.Claim(ctx(t), batch(2), "p1", later, 10, 1)
	if err != nil || fmt.Sprint(ids(got)) != "[lfr_0005]" {
		t.Fatalf("claim under a tiny byte cap: %v, %v; want lfr_0005 alone", ids(got), err)
	}
	got, err = b.Claim(ctx(t), batch(3), "p1", later, 10, 1<<40)
	if err != nil || fmt.Sprint(ids(got)) != "[lfr_0006 lfr_0007]" {
		t.Fatalf("last claim: %v, %v", ids(got), err)
	}
	got, err = a.Claim(ctx(t), batch(4), "p1", later, 10, big)
	if err != nil || len(got) != 0 {
		t.Fatalf("claim of an empty pool: %v, %v", ids(got), err)
	}
	if err := a.RecordCreated(ctx(t), batch(4).ID, "msgbatch_4", base); !errors.Is(err, llmfleet.ErrNotFound) {
		t.Errorf("the batch of an empty claim was recorded: RecordCreated = %v", err)
	}
	if r, err := b.GetRequest(ctx(t), "lfr_0004"); err != nil || r.State != llmfleet.RequestQueued {
		t.Errorf("the other pool's request: %v, %v", r, err)
	}
}

func (s *sharedSuite) claimConcurrent(t *testing.T) {
	sts := s.stores(t, 2)
	const n = 120
	for i := range n {
		addTo(t, sts[i%2], pooled(i+1, "p"))
	}
	var mu sync.Mutex
	claimed := map[string]int{}
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Go(func() {
			st := sts[g%2]
			for k := 0; ; k++ {
				b := batch(1000*(g+1) + k)
				got, err := st.Claim(ctx(t), b, "p", later, 7, 1<<40)
				if err != nil {
					t.Error(err)
					return
				}
				if len(got) == 0 {
					return
				}
				mu.Lock()
				for _, r := range got {
					claimed[r.ID]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(claimed) != n {
		t.Errorf("%d requests claimed, want %d", len(claimed), n)
	}
	for id, k := range claimed {
		if k != 1 {
			t.Errorf("%s claimed %d times", id, k)
		}
	}
}

func (s *sharedSuite) adopt(t *testing.T) {
	sts := s.stores(t, 2)
	a, b := sts[0], sts[1]
	sync4 := pooled(4, "p")
	sync4.State = llmfleet.RequestSubmitted
	addTo(t, a, pooled(1, "p"), pooled(2, "p"), pooled(3, "q"), sync4)
	if _, err := a.Heartbeat(ctx(t), time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Claim(ctx(t), batch(1), "p", later, 1, 1<<40); err != nil {
		t.Fatal(err)
	}
	q, bs, err := b.Adopt(ctx(t))
	if err != nil || len(q)+len(bs) != 0 {
		t.Fatalf("Adopt while the owner is alive: %v queued, %d batches, %v", ids(q), len(bs), err)
	}
	if _, err := a.Heartbeat(ctx(t), 0); err != nil {
		t.Fatal(err)
	}
	q, bs, err = b.Adopt(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(ids(q)) != "[lfr_0002 lfr_0003 lfr_0004]" {
		t.Errorf("adopted queued %v, want lfr_0002 lfr_0003 lfr_0004 (sent sync)", ids(q))
	}
	if len(bs) != 1 || bs[0].Batch.ID != batch(1).ID || fmt.Sprint(ids(bs[0].Requests)) != "[lfr_0001]" {
		t.Errorf("adopted batches: %d, want %s with lfr_0001", len(bs), batch(1).ID)
	}
	q, bs, err = b.Adopt(ctx(t))
	if err != nil || len(q)+len(bs) != 0 {
		t.Errorf("second Adopt: %v queued, %d batches, %v", ids(q), len(bs), err)
	}
	held, err := a.Heartbeat(ctx(t), time.Minute)
	if err != nil || held {
		t.Errorf("Heartbeat after the lease ended: held %v, %v; want false", held, err)
	}
	q, bs, err = a.Adopt(ctx(t))
	if err != nil || len(q)+len(bs) != 0 {
		t.Errorf("Adopt of what the other adopted: %v queued, %d batches, %v", ids(q), len(bs), err)
	}
	// A lease that ended with nobody adopting: the next Heartbeat makes a
	// new owner, which adopts what the ended one owned.
	addTo(t, a, pooled(5, "p"))
	if _, err := a.Heartbeat(ctx(t), 0); err != nil {
		t.Fatal(err)
	}
	if held, err := a.Heartbeat(ctx(t), time.Minute); err != nil || held {
		t.Fatalf("Heartbeat after the lease ended: held %v, %v; want false", held, err)
	}
	addTo(t, a, pooled(6, "p"))
	q, _, err = a.Adopt(ctx(t))
	if err != nil || fmt.Sprint(ids(q)) != "[lfr_0005]" {
		t.Errorf("Adopt by the new owner of what its ended lease held: %v, %v; want lfr_0005", ids(q), err)
	}
	if q, _, err = b.Adopt(ctx(t)); err != nil || len(q) != 0 {
		t.Errorf("Adopt of what the new owner holds: %v, %v; want none", ids(q), err)
	}
}

func (s *sharedSuite) watch(t *testing.T) {
	sts := s.stores(t, 2)
	a, b := sts[0], sts[1]
	addTo(t, a, pooled(1, "p"), pooled(2, "p"))
	seen := make(chan string, 16)
	ready := make(chan struct{})
	var once sync.Once
	wctx, cancel := contextWithCancel(t)
	defer cancel()
	go b.Watch(wctx, func(ids []string) {
		once.Do(func() { close(ready) })
		for _, id := range ids {
			seen <- id
		}
	})
	// Until the watch is listening, what completes may not be announced:
	// complete probes, one at a time, until one is.
	deadline := time.Now().Add(time.Minute)
	for k := 100; ; k++ {
		addTo(t, a, pooled(k, "probe"))
		if _, err := a.CompleteRequests(ctx(t), []llmfleet.Completion{{RequestID: request(k).ID, Result: result(k)}}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-ready:
		case <-time.After(50 * time.Millisecond):
			if time.Now().After(deadline) {
				t.Fatal("no completion announced within a minute")
			}
			continue
		}
		break
	}
	if _, err := a.CompleteRequests(ctx(t), []llmfleet.Completion{{RequestID: "lfr_0002", Result: result(2)}}); err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case id := <-seen:
			if id == "lfr_0002" {
				return
			}
		case <-time.After(time.Minute):
			t.Fatal("lfr_0002's completion not announced within a minute")
		}
	}
}

func contextWithCancel(t *testing.T) (context.Context, context.CancelFunc) {
	return context.WithCancel(t.Context())
}

func (s *sharedSuite) getRequests(t *testing.T) {
	sts := s.stores(t, 2)
	a, b := sts[0], sts[1]
	addTo(t, a, pooled(1, "p"), pooled(2, "p"))
	addTo(t, b, pooled(3, "p"))
	if _, err := a.CompleteRequests(ctx(t), []llmfleet.Completion{{RequestID: "lfr_0002", Result: result(2)}}); err != nil {
		t.Fatal(err)
	}
	got, err := b.GetRequests(ctx(t), []string{"lfr_0003", "lfr_0002", "lfr_unknown", "lfr_0001"})
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]*llmfleet.StoredRequest{}
	for _, r := range got {
		byID[r.ID] = r
	}
	if len(got) != 3 || len(byID) != 3 {
		t.Fatalf("GetRequests returned %v, want lfr_0001..3 once each", ids(got))
	}
	for _, id := range []string{"lfr_0001", "lfr_0002", "lfr_0003"} {
		one, err := a.GetRequest(ctx(t), id)
		if err != nil {
			t.Fatal(err)
		}
		checkRequest(t, byID[id], one)
	}
}

func (s *sharedSuite) cache(t *testing.T) {
	sts := s.stores(t, 2)
	a, b := sts[0], sts[1]
	var cs suite
	if err := a.AddCacheStats(ctx(t), []llmfleet.CacheStat{counted(0, 3, 2), counted(1, 1, 0)}); err != nil {
		t.Fatal(err)
	}
	if err := b.AddCacheStats(ctx(t), []llmfleet.CacheStat{counted(0, 1, 1)}); err != nil {
		t.Fatal(err)
	}
	want := []llmfleet.CacheStat{counted(0, 4, 3), counted(1, 1, 0)}
	cs.checkStats(t, a, "the first process", want)
	cs.checkStats(t, b, "the second process", want)

	p := prefix("cred_a", 1, 4096)
	if err := a.PutPrefixes(ctx(t), []llmfleet.PrefixState{p}); err != nil {
		t.Fatal(err)
	}
	cs.checkPrefixes(t, b, "put by the other process", "cred_a", []string{p.Hash}, p)
	later := llmfleet.PrefixState{CredentialID: p.CredentialID, Hash: p.Hash, BatchUntil: p.BatchUntil.Add(time.Hour)}
	if err := b.PutPrefixes(ctx(t), []llmfleet.PrefixState{later}); err != nil {
		t.Fatal(err)
	}
	p.BatchUntil = later.BatchUntil
	cs.checkPrefixes(t, a, "updated by the other process", "cred_a", []string{p.Hash}, p)

	sum := addStatsConcurrently(t, []llmfleet.Store{a, b}, 6, 20)
	// Added to what was there: want's keys 0 and 1.
	sum[0].Lookups, sum[0].Hits = sum[0].Lookups+4, sum[0].Hits+3
	sum[1].Lookups++
	cs.checkStats(t, b, "after concurrent calls of both processes", sum)
}
