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

// ledgerOf collects the entries a dispatcher observes.
type ledgerOf struct {
	mu      sync.Mutex
	entries []llmfleet.LedgerEntry
}

func (l *ledgerOf) observe(e llmfleet.LedgerEntry, _ bool) {
	l.mu.Lock()
	l.entries = append(l.entries, e)
	l.mu.Unlock()
}

func (l *ledgerOf) all() []llmfleet.LedgerEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]llmfleet.LedgerEntry(nil), l.entries...)
}

// A batched request whose batch straggles is sent sync before its budget
// runs out: its caller is answered in time, by the sync route, and the
// batch's result, when it comes, is paid and recorded, not delivered.
func TestRescueOfAStraggler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.turnaround = func(string) time.Duration { return 30 * time.Minute } // a straggler
		var l ledgerOf
		d := &Dispatcher{Providers: []llmfleet.Provider{f}, Observe: l.observe,
			Policy: Policy{BatchMinSize: 1, SyncLatencyPrior: 20 * time.Second, RescueMargin: 2 * time.Second}}
		if err := d.Open(); err != nil {
			t.Fatal(err)
		}
		defer d.Close(t.Context())
		start := time.Now()
		resp, err := d.SubmitBatch(t.Context(), 10*time.Minute, req("k", "late"))
		if err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took > 10*time.Minute {
			t.Fatalf("answered after %s, past its budget", took)
		}
		if resp.Route != llmfleet.RouteSync || !strings.Contains(string(resp.Body), "re: late") {
			t.Fatalf("answer %s %s", resp.Route, resp.Body)
		}
		if f.count("send") != 1 || f.count("create") != 1 {
			t.Fatalf("%d sends, %d creates", f.count("send"), f.count("create"))
		}
		time.Sleep(time.Hour) // the batch ends and its result comes
		es := l.all()
		if len(es) != 2 {
			t.Fatalf("entries %+v", es)
		}
		rescue, late := es[0], es[1]
		if rescue.Rescue != llmfleet.RescueSync || rescue.Route != llmfleet.RouteSync || !rescue.BudgetMet || rescue.Outcome != "ok" {
			t.Errorf("rescue entry %+v", rescue)
		}
		if late.Rescue != llmfleet.RescueLate || late.Route != llmfleet.RouteBatch || late.BatchID == "" || late.Usage.OutputTokens == 0 {
			t.Errorf("late entry %+v", late)
		}
		if s := d.Stats(); s.BudgetMisses != 0 || s.BatchesInFlight != 0 {
			t.Fatalf("stats %+v", s)
		}
	})
}

// A batch that answers while the rescue's call is under way wins; the
// rescue's answer, when it comes, is recorded as late.
func TestBatchAnswerBeatsTheRescue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		// The rescue starts at 7m58s and takes a minute; the batch ends
		// at about 8m20s, in between.
		f.turnaround = func(string) time.Duration { return 8*time.Minute + 20*time.Second }
		f.sendDelay = time.Minute
		var l ledgerOf
		d := &Dispatcher{Providers: []llmfleet.Provider{f}, Observe: l.observe,
			Policy: Policy{BatchMinSize: 1, SyncLatencyPrior: 2 * time.Minute, PollInterval: time.Second, MaxPollInterval: time.Second}}
		if err := d.Open(); err != nil {
			t.Fatal(err)
		}
		defer d.Close(t.Context())
		resp, err := d.SubmitBatch(t.Context(), 10*time.Minute, req("k", "race"))
		if err != nil || resp.Route != llmfleet.RouteBatch {
			t.Fatalf("%v %v", resp, err)
		}
		time.Sleep(time.Hour)
		es := l.all()
		if len(es) != 2 || es[0].Route != llmfleet.RouteBatch || es[0].Rescue != "" || es[1].Rescue != llmfleet.RescueLate || es[1].Route != llmfleet.RouteSync {
			t.Fatalf("entries %+v", es)
		}
	})
}

// Under Policy.HardDeadline the sync route cuts at the budget: a sync
// call still unanswered when the budget runs out is given up with
// ErrBudgetExceeded at the budget.
func TestSyncRouteTimesOutAtAHardDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.sendDelay = 40 * time.Second // the upstream hangs
		d := open(t, f, Policy{HardDeadline: true})
		start := time.Now()
		_, err := d.Submit(t.Context(), 3*time.Second, req("k", "hurry"))
		if !errors.Is(err, llmfleet.ErrBudgetExceeded) {
			t.Fatalf("err %v", err)
		}
		if took := time.Since(start); took != 3*time.Second {
			t.Fatalf("gave up after %s, want at the 3s budget", took)
		}
		if s := d.Stats(); s.BudgetMisses != 1 || s.SyncCalls != 1 {
			t.Fatalf("stats %+v", s)
		}
	})
}

// Without a hard deadline the budget routes and does not cut: the sync
// call is answered when the upstream answers, late, a budget miss.
func TestSyncRouteAnsweredLate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.sendDelay = 40 * time.Second
		d := open(t, f, Policy{})
		start := time.Now()
		resp, err := d.Submit(t.Context(), 3*time.Second, req("k", "hurry"))
		if err != nil || resp.Route != llmfleet.RouteSync || !strings.Contains(string(resp.Body), "re: hurry") {
			t.Fatalf("%+v %v", resp, err)
		}
		if took := time.Since(start); took != 40*time.Second {
			t.Fatalf("answered after %s, want when the upstream answered", took)
		}
		if s := d.Stats(); s.BudgetMisses != 1 || s.SyncCalls != 1 || s.Errors != 0 {
			t.Fatalf("stats %+v", s)
		}
	})
}

// rescueAtTheDeadline submits a straggler whose rescue's sync call (made
// at 9m38s, taking a minute) is still under way when its 10m budget runs
// out, and returns the ledger after its batch has ended.
func rescueAtTheDeadline(t *testing.T, pol Policy) ([]llmfleet.LedgerEntry, llmfleet.Stats) {
	f := newFake()
	f.turnaround = func(string) time.Duration { return 30 * time.Minute }
	f.sendDelay = time.Minute
	var l ledgerOf
	pol.BatchMinSize, pol.SyncLatencyPrior, pol.RescueMargin = 1, 20*time.Second, 2*time.Second
	d := &Dispatcher{Providers: []llmfleet.Provider{f}, Observe: l.observe, Policy: pol}
	if err := d.Open(); err != nil {
		t.Fatal(err)
	}
	defer d.Close(t.Context())
	start := time.Now()
	// The batch route's caller is answered at its deadline either way.
	if _, err := d.SubmitBatch(t.Context(), 10*time.Minute, req("k", "late")); !errors.Is(err, llmfleet.ErrBudgetExceeded) || time.Since(start) != 10*time.Minute {
		t.Fatalf("after %s: %v", time.Since(start), err)
	}
	time.Sleep(time.Hour)
	if f.count("send") != 1 || f.count("create") != 1 {
		t.Fatalf("%d sends, %d creates", f.count("send"), f.count("create"))
	}
	return l.all(), d.Stats()
}

// A rescue's sync call under way when the deadline passes is not cut: its
// answer is delivered (stored, with a Store) and recorded, late; the
// batch's, later, is recorded as late.
func TestRescueNotCutAtTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		es, s := rescueAtTheDeadline(t, Policy{})
		if len(es) != 2 {
			t.Fatalf("entries %+v", es)
		}
		rescue, late := es[0], es[1]
		if rescue.Rescue != llmfleet.RescueSync || rescue.Route != llmfleet.RouteSync || rescue.Outcome != "ok" ||
			rescue.BudgetMet || rescue.Estimated || rescue.Usage.OutputTokens == 0 {
			t.Errorf("rescue entry %+v", rescue)
		}
		if late.Rescue != llmfleet.RescueLate || late.Route != llmfleet.RouteBatch {
			t.Errorf("late entry %+v", late)
		}
		if s.BudgetMisses != 1 {
			t.Errorf("stats %+v", s)
		}
	})
}

// Under Policy.HardDeadline the rescue's sync call is cut at the deadline;
// the provider may bill it, so it is recorded as paid and not delivered,
// its usage estimated. The batch answers the request.
func TestRescueCutAtAHardDeadlineIsRecorded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		es, _ := rescueAtTheDeadline(t, Policy{HardDeadline: true})
		if len(es) != 2 {
			t.Fatalf("entries %+v", es)
		}
		cut, batch := es[0], es[1]
		if cut.Rescue != llmfleet.RescueLate || cut.Route != llmfleet.RouteSync || cut.Outcome != "budget_exceeded" ||
			!cut.Estimated || cut.Usage.InputTokens == 0 || cut.Usage.OutputTokens != 0 || cut.Latency != 22*time.Second {
			t.Errorf("cut rescue's entry %+v", cut)
		}
		if batch.Route != llmfleet.RouteBatch || batch.Outcome != "ok" || batch.Rescue != llmfleet.RescueNone {
			t.Errorf("batch entry %+v", batch)
		}
	})
}

// failingComplete is a Store whose first CompleteRequests calls fail.
type failingComplete struct {
	*sqlite.DB
	mu    sync.Mutex
	fails int
}

func (s *failingComplete) CompleteRequests(ctx context.Context, done []llmfleet.Completion) ([]bool, error) {
	s.mu.Lock()
	fail := s.fails > 0
	s.fails--
	s.mu.Unlock()
	if fail {
		return nil, errors.New("disk full")
	}
	return s.DB.CompleteRequests(ctx, done)
}

// A rescue whose answer cannot be stored at first is held, not lost: its
// caller is answered from it, and it is stored (with its ledger entry)
// once the store takes it; the batch's answer, which comes later, is
// recorded as late. The ledger holds the rescue's cost and the batch's
// answer, once each.
func TestRescueNotStoredIsHeld(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	synctest.Test(t, func(t *testing.T) {
		f, v := newFake(), newVault(t)
		f.turnaround = func(string) time.Duration { return 12 * time.Minute }
		db, err := sqlite.Open(t.Context(), path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		d := &Dispatcher{Providers: []llmfleet.Provider{f}, Store: &failingComplete{DB: db, fails: 1}, Sealer: v,
			Policy: Policy{BatchMinSize: 1, SyncLatencyPrior: 20 * time.Second}}
		if err := d.Open(); err != nil {
			t.Fatal(err)
		}
		defer d.Close(t.Context())
		cred := llmfleet.Credential{APIKey: "sk-rescue"}
		id, err := d.Enqueue(t.Context(), 10*time.Minute, &llmfleet.Request{Credential: cred, Body: body("m1", "late")})
		if err != nil {
			t.Fatal(err)
		}
		res := await(t, d, id, cred)
		if res.Err != nil || !strings.Contains(string(res.Body), "re: late") {
			t.Fatalf("%+v %s", res.Err, res.Body)
		}
		time.Sleep(time.Hour) // the batch ends and its answer comes
		entries, err := db.Ledger(t.Context(), time.Time{}, time.Now().Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != 2 || entries[0].Rescue != llmfleet.RescueSync || entries[0].Route != llmfleet.RouteSync ||
			entries[1].Rescue != llmfleet.RescueLate || entries[1].Route != llmfleet.RouteBatch {
			t.Fatalf("ledger %+v", entries)
		}
		if f.count("send") != 1 || f.count("create") != 1 {
			t.Fatalf("%d sends, %d creates", f.count("send"), f.count("create"))
		}
	})
}
