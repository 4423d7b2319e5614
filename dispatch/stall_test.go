package dispatch

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/sqlite"
)

// stalledStore is a Store whose AddRequest waits until release is closed
// (a lock held elsewhere). honest stores nothing once its context ends
// (the Store contract); otherwise the write lands once released whatever
// its context does, as a statement left running on a server would.
type stalledStore struct {
	*sqlite.DB
	release chan struct{}
	honest  bool
}

func (s *stalledStore) AddRequest(ctx context.Context, r *llmfleet.StoredRequest) error {
	if s.honest {
		select {
		case <-s.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	} else {
		<-s.release
	}
	return s.DB.AddRequest(context.Background(), r)
}

// stallFixture opens a dispatcher on a SQLite store whose AddRequest
// stalls until the returned function is called.
func stallFixture(t *testing.T, path string, f *fakeProvider, honest bool, l *ledgerOf) (*Dispatcher, *sqlite.DB, func()) {
	t.Helper()
	db, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	st := &stalledStore{DB: db, release: make(chan struct{}), honest: honest}
	d := &Dispatcher{Providers: []llmfleet.Provider{f}, Store: st, Sealer: newVault(t), Observe: l.observe,
		Policy: Policy{BatchMinSize: 1, SyncLatencyPrior: 5 * time.Second, RescueMargin: 2 * time.Second}}
	if err := d.Open(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		d.Close(ctx)
	})
	var once sync.Once
	return d, db, func() { once.Do(func() { close(st.release) }) }
}

// Issue 20, finding 3: a store stalled for longer than a budget. The
// caller's request goes sync by its rescue time and is answered within
// its budget, once; it is never batched, whether the stalled write is
// given up (the Store contract) or lands after all (a statement left
// running): then its row is completed with the sync answer.
func TestStoreStallGoesSyncWithinBudget(t *testing.T) {
	for _, honest := range []bool{true, false} {
		name := "write given up"
		if !honest {
			name = "write lands late"
		}
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state.db")
			synctest.Test(t, func(t *testing.T) {
				f := newFake()
				f.sendDelay = time.Second
				var l ledgerOf
				d, db, release := stallFixture(t, path, f, honest, &l)
				start := time.Now()
				r := req("k", "stalled")
				resp, err := d.SubmitBatch(t.Context(), time.Minute, r)
				if err != nil {
					t.Fatal(err)
				}
				if took := time.Since(start); took > time.Minute {
					t.Errorf("answered after %s, past its 1m budget", took)
				}
				if resp.Route != llmfleet.RouteSync || !strings.Contains(string(resp.Body), "re: stalled") {
					t.Fatalf("answer %s %s", resp.Route, resp.Body)
				}
				time.Sleep(2 * time.Minute) // the lock is held longer than the budget
				release()
				time.Sleep(time.Hour)
				if f.count("send") != 1 || f.count("create") != 0 {
					t.Fatalf("%d sync calls, %d batches; want the one sync call alone", f.count("send"), f.count("create"))
				}
				sr, err := db.GetRequest(t.Context(), resp.RequestID)
				switch {
				case honest && !errors.Is(err, llmfleet.ErrNotFound):
					t.Errorf("the given-up write: %v, %v; want nothing stored", sr, err)
				case !honest && (err != nil || sr.Result == nil || string(sr.Result.Body) != string(resp.Body)):
					t.Errorf("the late write: %+v, %v; want completed with the sync answer", sr, err)
				}
				if q, b, err := db.Pending(t.Context()); err != nil || len(q)+len(b) != 0 {
					t.Errorf("pending: %d queued, %d batches, %v; want none", len(q), len(b), err)
				}
				es := l.all()
				if len(es) != 1 || es[0].Route != llmfleet.RouteSync || !es[0].BudgetMet {
					t.Fatalf("ledger %+v; want one sync entry, budget met", es)
				}
				stored, err := db.Ledger(t.Context(), time.Time{}, time.Now().Add(time.Hour))
				if err != nil || len(stored) != 1 {
					t.Fatalf("stored ledger %+v, %v; want the one entry", stored, err)
				}
			})
		})
	}
}

// A ticket (its answer read later) must be stored before it is
// acknowledged: one the stalled store does not take by its deadline fails
// at once, clearly (llmfleet.ErrStore), and is never sent.
func TestStoreStallFailsATicket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		var l ledgerOf
		d, db, release := stallFixture(t, path, f, true, &l)
		defer release()
		cred := llmfleet.Credential{APIKey: "k"}
		_, err := d.Enqueue(t.Context(), time.Minute, &llmfleet.Request{Credential: cred, Body: body("m1", "ticket")})
		if !errors.Is(err, llmfleet.ErrStore) {
			t.Fatalf("Enqueue under a stalled store: %v, want an error wrapping llmfleet.ErrStore", err)
		}
		release()
		time.Sleep(time.Hour)
		if f.count("send")+f.count("create") != 0 {
			t.Fatalf("%d sync calls, %d batches for a ticket never acknowledged", f.count("send"), f.count("create"))
		}
		if q, _, _ := db.Pending(t.Context()); len(q) != 0 {
			t.Errorf("%d queued", len(q))
		}
	})
}

// Issue 20, finding 8: a request whose budget cannot hold a batch with
// its rescue (a 20s budget against a 30s sync latency prior, as on a
// fresh replica) is not batched, be it a ticket or a forced batch: it is
// sent sync at once, once, and its answer stored for its ticket.
func TestShortBudgetIsNotBatched(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.sendDelay = 5 * time.Second // both arrive before a sync latency is learned
		db, err := sqlite.Open(t.Context(), path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var l ledgerOf
		d := &Dispatcher{Providers: []llmfleet.Provider{f}, Store: db, Sealer: newVault(t), Observe: l.observe,
			Policy: Policy{BatchMinSize: 1}}
		if err := d.Open(); err != nil {
			t.Fatal(err)
		}
		defer d.Close(t.Context())
		cred := llmfleet.Credential{APIKey: "k"}
		id, err := d.Enqueue(t.Context(), 20*time.Second, &llmfleet.Request{Credential: cred, Body: body("m1", "ticket")})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := d.SubmitBatch(t.Context(), 20*time.Second, req("k", "forced"))
		if err != nil || resp.Route != llmfleet.RouteSync {
			t.Fatalf("forced batch with a short budget: %v, %v", resp, err)
		}
		res := await(t, d, id, cred)
		if res.Err != nil || !strings.Contains(string(res.Body), "re: ticket") {
			t.Fatalf("ticket result %+v %s", res.Err, res.Body)
		}
		time.Sleep(time.Hour)
		if f.count("send") != 2 || f.count("create") != 0 {
			t.Fatalf("%d sync calls, %d batches; want 2 sync calls and no batch", f.count("send"), f.count("create"))
		}
		for _, e := range l.all() {
			if e.Route != llmfleet.RouteSync || e.Rescue != llmfleet.RescueNone {
				t.Errorf("ledger entry %+v; want sync, no rescue", e)
			}
		}
		if q, b, _ := db.Pending(t.Context()); len(q)+len(b) != 0 {
			t.Errorf("pending after the answers: %d queued, %d batches", len(q), len(b))
		}
	})
}

// failingStore is a Store whose CompleteRequests and AddLedger fail until
// until, on the test's clock (a full disk, freed at until).
type failingStore struct {
	*sqlite.DB
	until time.Time
}

func (s *failingStore) CompleteRequests(ctx context.Context, done []llmfleet.Completion) ([]bool, error) {
	if time.Now().Before(s.until) {
		return nil, errors.New("disk full")
	}
	return s.DB.CompleteRequests(ctx, done)
}

func (s *failingStore) AddLedger(ctx context.Context, entries []llmfleet.LedgerEntry) error {
	if time.Now().Before(s.until) {
		return errors.New("disk full")
	}
	return s.DB.AddLedger(ctx, entries)
}

// Issue 20, finding 5: batch results read while the disk is full cannot
// be stored. At their rescue time the callers are answered from the
// results in hand, not paid for again; once space returns the results
// are stored, each with its ledger entry, once.
func TestResultsInHandAreNotPaidAgain(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.turnaround = func(string) time.Duration { return 5 * time.Minute }
		db, err := sqlite.Open(t.Context(), path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		st := &failingStore{DB: db, until: time.Now().Add(4 * time.Minute)}
		d := &Dispatcher{Providers: []llmfleet.Provider{f}, Store: st, Sealer: newVault(t),
			Policy: Policy{BatchMinSize: 3, SyncLatencyPrior: 20 * time.Second}}
		if err := d.Open(); err != nil {
			t.Fatal(err)
		}
		defer d.Close(t.Context())
		start := time.Now()
		st.until = start.Add(30 * time.Minute) // full from the batch's end until well past the deadlines
		var wg sync.WaitGroup
		for _, p := range []string{"a", "b", "c"} {
			wg.Go(func() {
				resp, err := d.SubmitBatch(t.Context(), 10*time.Minute, req("k", p))
				if err != nil || resp.Route != llmfleet.RouteBatch || !strings.Contains(string(resp.Body), "re: "+p) {
					t.Errorf("%s: %v %v", p, resp, err)
				}
			})
		}
		wg.Wait()
		if took := time.Since(start); took > 10*time.Minute {
			t.Errorf("answered after %s, past the budget", took)
		}
		time.Sleep(time.Hour) // space returns; the results are stored
		if f.count("send") != 0 || f.count("create") != 1 {
			t.Fatalf("%d sync calls, %d batches; want the batch alone", f.count("send"), f.count("create"))
		}
		es, err := db.Ledger(t.Context(), time.Time{}, time.Now().Add(time.Hour))
		if err != nil || len(es) != 3 {
			t.Fatalf("ledger %+v, %v; want the 3 batch entries", es, err)
		}
		for _, e := range es {
			if e.Route != llmfleet.RouteBatch || e.Rescue != llmfleet.RescueNone {
				t.Errorf("entry %+v", e)
			}
		}
	})
}

// A request sent sync at once by a process that ended before storing its
// answer is answered, at the next start, with the interruption: its call
// may have been billed, so it is not sent again.
func TestSentSyncInterruptedIsNotSentAgain(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	synctest.Test(t, func(t *testing.T) {
		f, v := newFake(), newVault(t)
		db, err := sqlite.Open(t.Context(), path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		cred := llmfleet.Credential{APIKey: "k"}
		sealed, _ := v.Seal(cred)
		if err := db.PutCredential(t.Context(), v.Fingerprint(cred), sealed); err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		r := &llmfleet.StoredRequest{ID: "lfr_cut", Provider: "fake", CredentialID: v.Fingerprint(cred), Body: body("m1", "cut"),
			Model: "m1", Budget: 20 * time.Second, AcceptedAt: now, Deadline: now.Add(20 * time.Second), State: llmfleet.RequestSubmitted}
		if err := db.AddRequest(t.Context(), r); err != nil {
			t.Fatal(err)
		}
		d := &Dispatcher{Providers: []llmfleet.Provider{f}, Store: db, Sealer: v}
		if err := d.Open(); err != nil {
			t.Fatal(err)
		}
		defer d.Close(t.Context())
		res := await(t, d, "lfr_cut", cred)
		if res.Err == nil || !strings.Contains(res.Err.Message, "not sent again") {
			t.Fatalf("result %+v; want the interruption", res)
		}
		time.Sleep(time.Hour)
		if f.count("send")+f.count("create") != 0 {
			t.Fatalf("%d sync calls, %d batches", f.count("send"), f.count("create"))
		}
	})
}
