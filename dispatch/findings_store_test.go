package dispatch

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/sqlite"
)

// Finding: intents swapped batches after a crash. Two intents of one key
// and one size: the older one's create never landed, the newer one's did.
// The first engine matched the older intent to the newer batch by size and
// time and sent the newer intent again: its prompts paid twice, the
// older's answered "result missing". Intents are now matched only by tag.
func TestRestartNeverSwapsBatchesBetweenIntents(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	synctest.Test(t, func(t *testing.T) {
		f, v := newFake(), newVault(t)
		cred := llmfleet.Credential{APIKey: "sk-swap"}
		d1, db1 := durable(t, f, path, v)
		older := enqueueN(t, d1, cred, "older", 4)
		newer := enqueueN(t, d1, cred, "newer", 4)
		crash(d1, db1)

		db, err := sqlite.Open(t.Context(), path)
		if err != nil {
			t.Fatal(err)
		}
		fp := v.Fingerprint(cred)
		leftIntent(t, db, fp, "lfb_older", older, "older", time.Now())
		time.Sleep(5 * time.Second) // the older create waits out a retry-after...
		items := leftIntent(t, db, fp, "lfb_newer", newer, "newer", time.Now())
		if _, err := f.CreateBatch(t.Context(), cred, "lfb_newer", nil, items); err != nil { // ...the newer lands
			t.Fatal(err)
		}
		db.Close()

		d2, db2 := durable(t, f, path, v)
		defer db2.Close()
		defer d2.Close(t.Context())
		for prefix, ids := range map[string][]string{"older": older, "newer": newer} {
			for i, id := range ids {
				if res := await(t, d2, id, cred); res.Err != nil || !strings.Contains(string(res.Body), fmt.Sprintf(`"re: %s%d"`, prefix, i)) {
					t.Fatalf("%s: %+v %s", id, res.Err, res.Body)
				}
			}
		}
		if got := f.batchSizes(); fmt.Sprint(got) != "[4 4]" {
			t.Fatalf("batches %v: want the newer adopted and the older sent once", got)
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		seen := map[string]int{}
		for _, fb := range f.batches {
			for _, it := range fb.items {
				seen[answerText(it.Params)]++
			}
		}
		for p, n := range seen {
			if n != 1 {
				t.Errorf("%s paid %d times", p, n)
			}
		}
	})
}

// slowStore is a Store whose acceptance stalls (a disk that stalls, a
// writer everyone queues on) for stall, for every concurrent caller alike.
type slowStore struct {
	*sqlite.DB
	stall time.Duration
}

func (s slowStore) AddRequest(ctx context.Context, r *llmfleet.StoredRequest) error {
	time.Sleep(s.stall)
	return s.DB.AddRequest(ctx, r)
}

// Finding: batches collapsed to one request each under a short stall of
// the store, because the pool window was measured from before the durable
// write. It now starts at the durable acceptance: requests that arrived
// together stay together.
func TestStoreStallDoesNotSplitBatches(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	synctest.Test(t, func(t *testing.T) {
		f, v := newFake(), newVault(t)
		db, err := sqlite.Open(t.Context(), path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		d := &Dispatcher{Providers: []llmfleet.Provider{f}, Store: slowStore{db, 3 * time.Second}, Sealer: v,
			Policy: Policy{BatchMinSize: 1000, BatchWindow: time.Second}}
		if err := d.Open(); err != nil {
			t.Fatal(err)
		}
		defer d.Close(t.Context())
		cred := llmfleet.Credential{APIKey: "sk-stall"}
		var wg sync.WaitGroup
		for i := range 40 {
			wg.Go(func() {
				if _, err := d.SubmitBatch(t.Context(), time.Hour, &llmfleet.Request{Credential: cred, Body: body("m1", fmt.Sprint("s", i))}); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if got := f.batchSizes(); fmt.Sprint(got) != "[40]" {
			t.Fatalf("batches %v: want the 40 requests that arrived together in one", got)
		}
	})
}

// Finding: the ledger counted a request twice across a restart ("closed"
// when the process shut down with it in flight, "ok" when the next start
// answered it). An entry is now written only with the request's result,
// in the same transaction: once.
func TestLedgerOnceAcrossRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	synctest.Test(t, func(t *testing.T) {
		f, v := newFake(), newVault(t)
		f.turnaround = func(string) time.Duration { return 10 * time.Minute }
		cred := llmfleet.Credential{APIKey: "sk-ledger"}
		d1, db1 := durable(t, f, path, v)
		ids := enqueueN(t, d1, cred, "l", 3)
		time.Sleep(time.Minute) // flushed and created, not ended
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		d1.Close(ctx) // gives up on the batch in flight
		cancel()
		db1.Close()

		d2, db2 := durable(t, f, path, v)
		defer db2.Close()
		defer d2.Close(t.Context())
		for _, id := range ids {
			await(t, d2, id, cred)
		}
		entries, err := db2.Ledger(t.Context(), time.Time{}, time.Now().Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		per := map[string]int{}
		for _, e := range entries {
			per[e.RequestID]++
			if e.Outcome != "ok" || e.Route != llmfleet.RouteBatch {
				t.Errorf("entry %+v", e)
			}
		}
		for _, id := range ids {
			if per[id] != 1 {
				t.Errorf("%s: %d ledger entries", id, per[id])
			}
		}
		if len(entries) != len(ids) {
			t.Fatalf("%d entries for %d requests", len(entries), len(ids))
		}
	})
}

// Turnarounds are learned per model from every batch, stored, and
// restored by the next start: a restarted dispatcher routes as the one
// before it had learned to.
func TestTurnaroundsLearnedAndRestored(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	synctest.Test(t, func(t *testing.T) {
		f, v := newFake(), newVault(t)
		f.turnaround = func(model string) time.Duration {
			if model == "slow" {
				return 50 * time.Minute
			}
			return 20 * time.Second
		}
		cred := llmfleet.Credential{APIKey: "sk-learn"}
		d1, db1 := durable(t, f, path, v)
		for _, m := range []string{"fast", "slow"} {
			if _, err := d1.SubmitBatch(t.Context(), 0, &llmfleet.Request{Credential: cred, Body: body(m, "x")}); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(time.Second) // the turnarounds are stored
		if err := d1.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
		db1.Close()

		d2, db2 := durable(t, f, path, v)
		defer db2.Close()
		defer d2.Close(t.Context())
		fast := d2.predictor.predict("fake", "fast")
		slow := d2.predictor.predict("fake", "slow")
		if fast != 20*time.Second || slow != 50*time.Minute {
			t.Fatalf("restored predictions: fast %s, slow %s", fast, slow)
		}
		r := &llmfleet.Request{Credential: cred, Body: body("fast", "y")}
		if got := d2.Plan(5*time.Minute, r); got != llmfleet.RouteBatch {
			t.Fatalf("fast model, 5m budget: %s", got)
		}
		if got := d2.Plan(30*time.Minute, &llmfleet.Request{Credential: cred, Body: body("slow", "y")}); got != llmfleet.RouteSync {
			t.Fatalf("slow model, 30m budget: %s", got)
		}
	})
}

// A create that Close cuts short concludes nothing: its requests are not
// answered with the cut's error but stay stored with their intent, and the
// next start reconciles the intent and sends them, once.
func TestCreateCutByCloseConcludesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	synctest.Test(t, func(t *testing.T) {
		f, v := newFake(), newVault(t)
		f.createHang = true
		cred := llmfleet.Credential{APIKey: "sk-cut"}
		d1, db1 := durable(t, f, path, v)
		ids := enqueueN(t, d1, cred, "c", 10) // a full pool: created at once
		synctest.Wait()
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		d1.Close(ctx)
		cancel()
		db1.Close()

		f.mu.Lock()
		f.createHang = false
		f.mu.Unlock()
		d2, db2 := durable(t, f, path, v)
		defer db2.Close()
		defer d2.Close(t.Context())
		for i, id := range ids {
			if res := await(t, d2, id, cred); res.Err != nil || !strings.Contains(string(res.Body), fmt.Sprintf(`"re: c%d"`, i)) {
				t.Fatalf("%s: %+v %s", id, res.Err, res.Body)
			}
		}
		if got := f.batchSizes(); fmt.Sprint(got) != "[10]" {
			t.Fatalf("batches %v", got)
		}
	})
}
