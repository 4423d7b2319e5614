package dispatch

import (
	"bytes"
	"context"
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

// durable opens a dispatcher on the store at path with the fake provider.
func durable(t *testing.T, f *fakeProvider, path string, v *vault.Vault) (*Dispatcher, *sqlite.DB) {
	t.Helper()
	db, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	d := &Dispatcher{Providers: []llmfleet.Provider{f}, Store: db, Sealer: v, Policy: Policy{BatchMinSize: 10}}
	if err := d.Open(); err != nil {
		t.Fatal(err)
	}
	return d, db
}

// crash stops a dispatcher the way a killed process stops: no flush, no
// drain, nothing more written.
func crash(d *Dispatcher, db *sqlite.DB) {
	d.mu.Lock()
	for _, p := range d.pools.m {
		p.stopTimer()
	}
	for _, t := range d.trackers.m {
		t.stop()
	}
	d.closed = true
	d.cancel()
	d.mu.Unlock()
	d.work.wait()
	db.Close()
}

// await polls Lookup until the request is answered.
func await(t *testing.T, d *Dispatcher, id string, cred llmfleet.Credential) *llmfleet.StoredResult {
	t.Helper()
	for range 100 {
		r, err := d.Lookup(t.Context(), id, cred)
		if err != nil {
			t.Fatal(err)
		}
		if r.Result != nil {
			return r.Result
		}
		time.Sleep(10 * time.Second)
	}
	t.Fatalf("request %s never answered", id)
	return nil
}

func newVault(t *testing.T) *vault.Vault {
	v, err := vault.New(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// enqueueN enqueues n requests with cred, prompts prefix0, prefix1, ...,
// and returns their ids.
func enqueueN(t *testing.T, d *Dispatcher, cred llmfleet.Credential, prefix string, n int) []string {
	t.Helper()
	var ids []string
	for i := range n {
		id, err := d.Enqueue(t.Context(), 0, &llmfleet.Request{Credential: cred, Body: body("m1", fmt.Sprint(prefix, i))})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

func TestRestartResubmitsQueuedRequests(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	synctest.Test(t, func(t *testing.T) {
		f, v := newFake(), newVault(t)
		cred := llmfleet.Credential{APIKey: "sk-queued"}
		d1, db1 := durable(t, f, path, v)
		ids := enqueueN(t, d1, cred, "q", 3)
		crash(d1, db1)
		if n := len(f.batchSizes()); n != 0 {
			t.Fatalf("%d batches before the restart", n)
		}

		d2, db2 := durable(t, f, path, v)
		defer db2.Close()
		defer d2.Close(t.Context())
		for i, id := range ids {
			res := await(t, d2, id, cred)
			if res.StatusCode != 200 || !strings.Contains(string(res.Body), fmt.Sprintf(`"re: q%d"`, i)) {
				t.Fatalf("%s: %d %s", id, res.StatusCode, res.Body)
			}
		}
		if got := f.batchSizes(); fmt.Sprint(got) != "[3]" {
			t.Fatalf("batches %v, want one of 3", got)
		}
		// Another key cannot read the tickets.
		if _, err := d2.Lookup(t.Context(), ids[0], llmfleet.Credential{APIKey: "sk-other"}); err != llmfleet.ErrNotFound {
			t.Fatalf("other key: %v", err)
		}
	})
}

func TestRestartReconcilesIntents(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	synctest.Test(t, func(t *testing.T) {
		f, v := newFake(), newVault(t)
		cred := llmfleet.Credential{APIKey: "sk-intent"}
		created, lost, db := twoIntentsLeft(t, f, v, path, cred, 2, 3)
		db.Close()

		d2, db2 := durable(t, f, path, v)
		defer db2.Close()
		defer d2.Close(t.Context())
		for i, id := range created {
			if res := await(t, d2, id, cred); !strings.Contains(string(res.Body), fmt.Sprintf(`"re: created%d"`, i)) {
				t.Fatalf("%s: %s", id, res.Body)
			}
		}
		for i, id := range lost {
			if res := await(t, d2, id, cred); !strings.Contains(string(res.Body), fmt.Sprintf(`"re: lost%d"`, i)) {
				t.Fatalf("%s: %s", id, res.Body)
			}
		}
		// The created batch was adopted, the lost one created once.
		if got := f.batchSizes(); fmt.Sprint(got) != "[2 3]" {
			t.Fatalf("batches %v, want [2 3]", got)
		}
	})
}

// Intents whose requests were all answered by their rescues before a
// crash are reconciled at the restart, not concluded failed: the one
// whose create had landed is tracked and its results, paid, ledgered
// late; the one that never reached the provider is given up without
// queueing its answered requests again (no second batch).
func TestRestartReconcilesIntentsOfAnsweredRequests(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	synctest.Test(t, func(t *testing.T) {
		f, v := newFake(), newVault(t)
		cred := llmfleet.Credential{APIKey: "sk-answered"}
		created, lost, db := twoIntentsLeft(t, f, v, path, cred, 2, 2)
		var rescued []llmfleet.Completion
		for _, id := range append(created, lost...) {
			rescued = append(rescued, llmfleet.Completion{RequestID: id, Result: &llmfleet.StoredResult{StatusCode: 200,
				Body: []byte(`{"type":"message","content":[]}`), CompletedAt: time.Now()}})
		}
		if _, err := db.CompleteRequests(t.Context(), rescued); err != nil {
			t.Fatal(err)
		}
		db.Close()

		d2, db2 := durable(t, f, path, v)
		defer db2.Close()
		defer d2.Close(t.Context())
		time.Sleep(time.Hour) // every look settled, every batch ended
		synctest.Wait()
		if got := f.batchSizes(); fmt.Sprint(got) != "[2]" {
			t.Fatalf("batches %v, want only the one that had landed: answered requests queued again", got)
		}
		entries, err := db2.Ledger(t.Context(), time.Unix(0, 0), time.Now().Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		late := 0
		for _, e := range entries {
			if e.Rescue == llmfleet.RescueLate {
				late++
			}
		}
		if late != len(created) {
			t.Fatalf("%d results ledgered late, want %d: the landed batch's results are paid", late, len(created))
		}
	})
}

func TestDurableSubmitCarriesRequestID(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	synctest.Test(t, func(t *testing.T) {
		f, v := newFake(), newVault(t)
		d, db := durable(t, f, path, v)
		defer db.Close()
		defer d.Close(context.Background())
		cred := llmfleet.Credential{APIKey: "sk-sync"}
		resp, err := d.SubmitBatch(t.Context(), 0, &llmfleet.Request{Credential: cred, Body: body("m1", "hi")})
		if err != nil {
			t.Fatal(err)
		}
		r, err := d.Lookup(t.Context(), resp.RequestID, cred)
		if err != nil || r.Result == nil || !bytes.Equal(r.Result.Body, resp.Body) {
			t.Fatalf("lookup %+v %v", r, err)
		}
	})
}

// Requests still queued when the process died are pooled together again
// after the restart, even though their batch window passed while it was
// down.
func TestRestartPoolsLateRequestsTogether(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	synctest.Test(t, func(t *testing.T) {
		f, v := newFake(), newVault(t)
		cred := llmfleet.Credential{APIKey: "sk-late"}
		d1, db1 := durable(t, f, path, v)
		ids := enqueueN(t, d1, cred, "q", 3)
		crash(d1, db1)
		time.Sleep(time.Hour)

		d2, db2 := durable(t, f, path, v)
		defer db2.Close()
		defer d2.Close(t.Context())
		for _, id := range ids {
			await(t, d2, id, cred)
		}
		if got := f.batchSizes(); fmt.Sprint(got) != "[3]" {
			t.Fatalf("batches %v, want one of 3", got)
		}
	})
}

// With a Store, a caller that stops waiting while its request is still
// pooled does not withdraw it: the request is batched and its answer kept,
// for the caller to read later by its id.
func TestDurableCallerLeavesWhileQueued(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	synctest.Test(t, func(t *testing.T) {
		f, v := newFake(), newVault(t)
		d, db := durable(t, f, path, v)
		defer db.Close()
		defer d.Close(context.Background())
		cred := llmfleet.Credential{APIKey: "sk-leaves"}
		ctx, cancel := context.WithCancel(t.Context())
		req := &llmfleet.Request{ID: llmfleet.NewID("lfr_"), Credential: cred, Body: body("m1", "gone")}
		go func() {
			time.Sleep(time.Second) // within the batch window
			cancel()
		}()
		if _, err := d.SubmitBatch(ctx, 0, req); err == nil {
			t.Fatal("SubmitBatch answered before its window ended")
		}
		res := await(t, d, req.ID, cred)
		if res.StatusCode != 200 || !strings.Contains(string(res.Body), `"re: gone"`) {
			t.Fatalf("%d %s", res.StatusCode, res.Body)
		}
	})
}

// leftIntent records, in the store at db, the intent of batch id holding
// the requests reqs (prompts prefix0, prefix1, ...), as a process killed
// during its create call leaves it, and returns the batch's items, tagged
// with id, for a test to create upstream.
// twoIntentsLeft accepts nCreated and nLost requests of cred in a store
// at path, crashes, and writes two intents of them as a process killed
// during its create calls would have left them: the first (lfb_created)
// reached the provider, the second (lfb_lost) did not. It returns their
// request ids and the store, open.
func twoIntentsLeft(t *testing.T, f *fakeProvider, v *vault.Vault, path string, cred llmfleet.Credential, nCreated, nLost int) (created, lost []string, db *sqlite.DB) {
	t.Helper()
	d1, db1 := durable(t, f, path, v)
	created = enqueueN(t, d1, cred, "created", nCreated)
	lost = enqueueN(t, d1, cred, "lost", nLost)
	crash(d1, db1)
	db, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	fp := v.Fingerprint(cred)
	items := leftIntent(t, db, fp, "lfb_created", created, "created", time.Now())
	leftIntent(t, db, fp, "lfb_lost", lost, "lost", time.Now())
	if _, err := f.CreateBatch(t.Context(), cred, "lfb_created", nil, items); err != nil {
		t.Fatal(err)
	}
	return created, lost, db
}

func leftIntent(t *testing.T, db *sqlite.DB, fp, id string, reqs []string, prefix string, at time.Time) []llmfleet.BatchItem {
	t.Helper()
	m := map[string]string{}
	var items []llmfleet.BatchItem
	for i, r := range reqs {
		m[r] = fmt.Sprintf("%s-%d", id, i+1)
		items = append(items, llmfleet.BatchItem{CustomID: m[r], Params: body("m1", fmt.Sprint(prefix, i))})
	}
	err := db.RecordIntent(t.Context(), &llmfleet.StoredBatch{ID: id, Provider: "fake", CredentialID: fp,
		State: llmfleet.BatchIntent, Size: len(reqs), IntentAt: at, CreateDeadline: at.Add(2 * time.Minute)}, m)
	if err != nil {
		t.Fatal(err)
	}
	return items
}
