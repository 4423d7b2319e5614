package postgres_test

import (
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/postgres"
	"github.com/llmfleet/llmfleet/postgres/pgtest"
	"github.com/llmfleet/llmfleet/storetest"
)

var _ llmfleet.Store = (*postgres.DB)(nil)

func open(t *testing.T, u string) *postgres.DB {
	t.Helper()
	d, err := postgres.Open(t.Context(), u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func openExclusive(t *testing.T, u string) (*postgres.DB, error) {
	d := &postgres.DB{URL: u, Replica: "test"}
	if err := d.Open(t.Context()); err != nil {
		return nil, err
	}
	t.Cleanup(func() { d.Close() })
	return d, nil
}

func TestStore(t *testing.T) {
	storetest.Run(t, storetest.Harness{
		New: func(t *testing.T) llmfleet.Store {
			d, err := openExclusive(t, pgtest.URL(t))
			if err != nil {
				t.Fatal(err)
			}
			return d
		},
		Reopen: func(t *testing.T, old llmfleet.Store) llmfleet.Store {
			d := old.(*postgres.DB)
			if err := d.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			n, err := openExclusive(t, d.URL)
			if err != nil {
				t.Fatal(err)
			}
			return n
		},
		Second: func(t *testing.T, open llmfleet.Store) error {
			d, err := openExclusive(t, open.(*postgres.DB).URL)
			if err == nil {
				d.Close()
			}
			return err
		},
	})
}

// Several processes starting at once on a fresh database migrate it once.
func TestConcurrentOpen(t *testing.T) {
	u := pgtest.URL(t)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			d, err := postgres.Open(t.Context(), u)
			if err == nil {
				err = d.Close()
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	d := open(t, u)
	if err := d.AddRequest(t.Context(), &llmfleet.StoredRequest{ID: "lfr_x", Provider: "anthropic", Body: []byte("{}")}); err != nil {
		t.Fatal(err)
	}
}

// Two stores on one database see each other's writes, and a request is
// completed once across them, with one ledger entry.
func TestShared(t *testing.T) {
	u := pgtest.URL(t)
	a, b := open(t, u), open(t, u)
	ctx := t.Context()
	if err := a.AddRequest(ctx, &llmfleet.StoredRequest{ID: "lfr_1", Provider: "anthropic", Body: []byte("{}"), State: llmfleet.RequestQueued}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i, d := range []*postgres.DB{a, b} {
		wg.Go(func() {
			res := &llmfleet.StoredResult{StatusCode: 200, Body: []byte(`{"by":` + string(rune('0'+i)) + `}`)}
			if _, err := d.CompleteRequests(ctx, []llmfleet.Completion{{RequestID: "lfr_1", Result: res,
				Ledger: &llmfleet.LedgerEntry{RequestID: "lfr_1", Time: time.Unix(100, 0)}}}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	got, err := b.GetRequest(ctx, "lfr_1")
	if err != nil || got.State != llmfleet.RequestDone {
		t.Fatalf("%+v %v", got, err)
	}
	es, err := a.Ledger(ctx, time.Unix(0, 0), time.Unix(1000, 0))
	if err != nil || len(es) != 1 {
		t.Fatalf("%d ledger entries (%v), want 1", len(es), err)
	}
}

func TestSharedStore(t *testing.T) {
	storetest.RunShared(t, storetest.SharedHarness{
		New: func(t *testing.T, n int) []llmfleet.SharedStore {
			u := pgtest.URL(t)
			out := make([]llmfleet.SharedStore, n)
			for i := range out {
				out[i] = open(t, u)
			}
			return out
		},
	})
}

// A process restarted under its replica name adopts what its earlier run
// owned at once; under another name, not before that run's lease ends.
func TestRestartAdopts(t *testing.T) {
	u := pgtest.URL(t)
	first := &postgres.DB{URL: u, Replica: "r1", Lease: time.Hour}
	if err := first.Open(t.Context()); err != nil {
		t.Fatal(err)
	}
	r := &llmfleet.StoredRequest{ID: "lfr_1", Provider: "anthropic", CredentialID: "c", Body: []byte(`{}`), Model: "m",
		Pool: "p", AcceptedAt: time.Unix(1, 0), State: llmfleet.RequestQueued}
	if err := first.AddRequest(t.Context(), r); err != nil {
		t.Fatal(err)
	}
	// A kill: the session ends, the lease (an hour) does not.
	first.Abandon()
	other := &postgres.DB{URL: u, Replica: "r2"}
	if err := other.Open(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if q, _, err := other.Adopt(t.Context()); err != nil || len(q) != 0 {
		t.Fatalf("another replica adopted %d under a live lease (%v)", len(q), err)
	}
	again := &postgres.DB{URL: u, Replica: "r1"}
	if err := again.Open(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	q, _, err := again.Adopt(t.Context())
	if err != nil || len(q) != 1 || q[0].ID != "lfr_1" {
		t.Fatalf("the restarted replica adopted %v (%v), want lfr_1", q, err)
	}
}

// A pool of one connection would be held by the replica name's lock: it
// holds two, and Open does not wait forever for the second.
func TestMaxConnsOne(t *testing.T) {
	d := &postgres.DB{URL: pgtest.URL(t), MaxConns: 1}
	if err := d.Open(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	if err := d.AddRequest(t.Context(), &llmfleet.StoredRequest{ID: "lfr_1", Provider: "anthropic", Body: []byte("{}")}); err != nil {
		t.Fatal(err)
	}
}
