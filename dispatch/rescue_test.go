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

// The sync route honours the budget: a sync call still unanswered when
// the budget runs out is given up with ErrBudgetExceeded at the budget.
func TestSyncRouteTimesOutAtTheBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.sendDelay = 40 * time.Second // the upstream hangs
		d := open(t, f, Policy{})
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
