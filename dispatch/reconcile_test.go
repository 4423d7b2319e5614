package dispatch

import (
	"bytes"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/sqlite"
	"github.com/llmfleet/llmfleet/vault"
)

// An intent left by a crash is reconciled with the provider's list of
// batches: a batch of the same size that the store resolved earlier (here
// by a previous process, whose custom_ids the old scheme would have
// reused) is not taken for it, while the batch the intent did create is
// adopted even if it has ended meanwhile.
func TestReconcileTellsOwnBatchFromEarlierOne(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	synctest.Test(t, func(t *testing.T) {
		f, v := newFake(), newVault(t)
		cred := llmfleet.Credential{APIKey: "sk-reconcile"}
		// A first process answers two requests in one batch.
		d1, db1 := durable(t, f, path, v)
		for _, id := range enqueueN(t, d1, cred, "old", 2) {
			await(t, d1, id, cred)
		}
		crash(d1, db1)

		// A second process is killed during two create calls of two
		// requests each: one never reached the provider, the other did,
		// and its batch ends before the restart.
		d2, db2 := durable(t, f, path, v)
		lost, made := enqueueN(t, d2, cred, "lost", 2), enqueueN(t, d2, cred, "made", 2)
		crash(d2, db2)
		db, err := sqlite.Open(t.Context(), path)
		if err != nil {
			t.Fatal(err)
		}
		fp := v.Fingerprint(cred)
		leftIntent(t, db, fp, "lfb_lost", lost, "lost", time.Now())
		items := leftIntent(t, db, fp, "lfb_made", made, "made", time.Now())
		if _, err := f.CreateBatch(t.Context(), cred, "lfb_made", nil, items); err != nil {
			t.Fatal(err)
		}
		db.Close()
		time.Sleep(2 * time.Minute)

		d3, db3 := durable(t, f, path, v)
		defer db3.Close()
		defer d3.Close(t.Context())
		for prefix, ids := range map[string][]string{"lost": lost, "made": made} {
			for i, id := range ids {
				res := await(t, d3, id, cred)
				if want := fmt.Sprintf(`"re: %s%d"`, prefix, i); res.StatusCode != 200 || !strings.Contains(string(res.Body), want) {
					t.Errorf("%s%d: %d %s", prefix, i, res.StatusCode, res.Body)
				}
			}
		}
		// The old batch, the made one, and the lost one created once.
		if got := f.batchSizes(); fmt.Sprint(got) != "[2 2 2]" {
			t.Fatalf("batches %v, want three of 2", got)
		}
	})
}

// batchState reads a batch's state straight from the database file.
func batchState(t *testing.T, path, id string) string {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var state string
	if err := db.QueryRow(`SELECT state FROM batches WHERE id = ?`, id).Scan(&state); err != nil {
		t.Fatal(err)
	}
	return state
}

// A restart resolves a batch whose requests were all answered before the
// crash, and keeps pending a batch whose credential it cannot unseal, for
// a start under the right secret.
func TestRestartLeftoverBatches(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	synctest.Test(t, func(t *testing.T) {
		f, v := newFake(), newVault(t)
		cred := llmfleet.Credential{APIKey: "sk-leftover"}
		d1, db1 := durable(t, f, path, v)
		id, err := d1.Enqueue(t.Context(), 0, &llmfleet.Request{Credential: cred, Body: body("m1", "done")})
		if err != nil {
			t.Fatal(err)
		}
		await(t, d1, id, cred)
		r, err := d1.Lookup(t.Context(), id, cred)
		if err != nil {
			t.Fatal(err)
		}
		done := r.BatchID
		// A crash between storing the results and resolving the batch.
		crash(d1, db1)
		raw, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := raw.Exec(`UPDATE batches SET state = 'created' WHERE id = ?`, done); err != nil {
			t.Fatal(err)
		}
		raw.Close()

		// A batch in flight, then a start under another secret.
		d2, db2 := durable(t, f, path, v)
		id2, err := d2.Enqueue(t.Context(), 0, &llmfleet.Request{Credential: cred, Body: body("m1", "later")})
		if err != nil {
			t.Fatal(err)
		}
		crashInFlight(d2, db2, f, 2)
		if got := batchState(t, path, done); got != "resolved" {
			t.Fatalf("answered batch is %s after a restart, want resolved", got)
		}

		other, err := vault.New(bytes.Repeat([]byte{9}, 32))
		if err != nil {
			t.Fatal(err)
		}
		d3, db3 := durable(t, f, path, other)
		crash(d3, db3)
		d4, db4 := durable(t, f, path, v)
		defer db4.Close()
		defer d4.Close(t.Context())
		if res := await(t, d4, id2, cred); !strings.Contains(string(res.Body), `"re: later"`) {
			t.Fatalf("%s: %d %s", id2, res.StatusCode, res.Body)
		}
	})
}

// crashInFlight sends d's pools out, waits until f has made its
// batches'th batch and its upstream id is recorded, and crashes d.
func crashInFlight(d *Dispatcher, db *sqlite.DB, f *fakeProvider, batches int) {
	d.mu.Lock()
	for _, p := range d.pools.m {
		d.pools.flushLocked(p, true)
	}
	d.mu.Unlock()
	for len(f.batchSizes()) < batches {
		time.Sleep(time.Second)
	}
	time.Sleep(time.Second) // the upstream id is recorded
	crash(d, db)
}

// A batch in flight whose request was answered meanwhile by a rescue (by
// this process before a crash, or by another replica) is still read on
// recovery: the provider bills its result for that request too, which
// the ledger records late, once, beside the rescue's sync call.
func TestRestartReadsRescuedRequestsResult(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	synctest.Test(t, func(t *testing.T) {
		f, v := newFake(), newVault(t)
		cred := llmfleet.Credential{APIKey: "sk-rescued"}
		d1, db1 := durable(t, f, path, v)
		var ids []string
		for _, p := range []string{"rescued", "pending"} {
			id, err := d1.Enqueue(t.Context(), 0, &llmfleet.Request{Credential: cred, Body: body("m1", p)})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		crashInFlight(d1, db1, f, 1)

		// The rescue's sync answer to the first, stored with its entry.
		db, err := sqlite.Open(t.Context(), path)
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		rescue := llmfleet.LedgerEntry{RequestID: ids[0], Time: now, Provider: f.Name(), Model: "m1", Route: llmfleet.RouteSync,
			Outcome: "ok", Rescue: llmfleet.RescueSync, BudgetMet: true}
		if _, err := db.CompleteRequests(t.Context(), []llmfleet.Completion{{RequestID: ids[0], Ledger: &rescue,
			Result: &llmfleet.StoredResult{StatusCode: 200, Body: []byte(`{"type":"message","content":[{"type":"text","text":"rescued"}]}`), CompletedAt: now}}}); err != nil {
			t.Fatal(err)
		}
		db.Close()

		d2, db2 := durable(t, f, path, v)
		defer db2.Close()
		defer d2.Close(t.Context())
		if res := await(t, d2, ids[1], cred); !strings.Contains(string(res.Body), `"re: pending"`) {
			t.Fatalf("%s: %d %s", ids[1], res.StatusCode, res.Body)
		}
		if res := await(t, d2, ids[0], cred); !strings.Contains(string(res.Body), `"rescued"`) {
			t.Fatalf("the rescued request's answer changed: %s", res.Body)
		}
		time.Sleep(time.Minute) // the late entry is booked
		synctest.Wait()
		entries, err := db2.Ledger(t.Context(), time.Unix(0, 0), time.Now().Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		var late, sync int
		for _, e := range entries {
			if e.RequestID == ids[0] {
				switch e.Rescue {
				case llmfleet.RescueLate:
					late++
				case llmfleet.RescueSync:
					sync++
				}
			}
		}
		if late != 1 || sync != 1 {
			t.Fatalf("the rescued request has %d sync and %d late entries, want 1 and 1: %+v", sync, late, entries)
		}
	})
}
