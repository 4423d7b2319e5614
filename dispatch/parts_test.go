package dispatch

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmfleet/llmfleet"
)

// What is queued with later runs once the lock is released, in order,
// by the goroutine that released it; nothing runs while it is held.
func TestEngineLockCallsOutOnceReleased(t *testing.T) {
	var l engineLock
	var got []int
	l.Lock()
	for i := range 3 {
		l.later(func() {
			if !l.mu.TryLock() {
				t.Error("called with the lock held")
			} else {
				l.mu.Unlock()
			}
			got = append(got, i)
		})
	}
	if len(got) != 0 {
		t.Fatal("called before Unlock")
	}
	l.Unlock()
	if len(got) != 3 || got[0] != 0 || got[2] != 2 {
		t.Fatalf("calls %v", got)
	}
	l.Lock()
	l.Unlock() // nothing queued: nothing runs again
	if len(got) != 3 {
		t.Fatalf("calls %v after an empty Unlock", got)
	}
}

// workGroup: busy until every piece of work begun has ended; its idle
// channel closes then; run goes through the Go hook and wait waits for it.
func TestWorkGroup(t *testing.T) {
	var hooked int
	g := workGroup{goHook: func(f func()) { hooked++; go f() }}
	if busy, _ := g.busy(); busy {
		t.Fatal("busy with nothing begun")
	}
	g.begin()
	g.begin()
	busy, idle := g.busy()
	if !busy {
		t.Fatal("not busy")
	}
	g.end()
	select {
	case <-idle:
		t.Fatal("idle with work under way")
	default:
	}
	ran := make(chan struct{})
	g.run(func() { close(ran); g.end() })
	<-idle
	g.wait()
	<-ran
	if hooked != 1 {
		t.Fatalf("Go hook called %d times", hooked)
	}
}

// ledgerJournal is a journal whose ledger writes fail while full is set.
type ledgerJournal struct {
	nopJournal
	mu      sync.Mutex
	full    bool
	written [][]llmfleet.LedgerEntry
}

func (j *ledgerJournal) durable() bool { return true }

func (j *ledgerJournal) ledger(_ context.Context, entries []llmfleet.LedgerEntry) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.full {
		return errors.New("disk full")
	}
	j.written = append(j.written, entries)
	return nil
}

// The paid ledger keeps the entries the store refuses in memory and
// writes them, in the order they came and once each, when it takes them.
func TestPaidLedgerKeepsEntriesUntilStored(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &Dispatcher{Providers: []llmfleet.Provider{newFake()}}
		if err := d.Open(); err != nil {
			t.Fatal(err)
		}
		defer d.Close(context.Background())
		j := &ledgerJournal{full: true}
		d.journal = j
		var observed int
		d.Observe = func(llmfleet.LedgerEntry, bool) { observed++ }
		d.paid.record([]llmfleet.LedgerEntry{{RequestID: "a"}})
		d.paid.record([]llmfleet.LedgerEntry{{RequestID: "b"}, {RequestID: "c"}})
		if observed != 3 {
			t.Fatalf("observed %d entries, want 3 (observed whether stored or not)", observed)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if busy, _ := d.work.busy(); !busy {
			t.Fatal("nothing retries the entries kept")
		}
		j.mu.Lock()
		j.full = false
		j.mu.Unlock()
		time.Sleep(time.Minute)
		synctest.Wait()
		j.mu.Lock()
		defer j.mu.Unlock()
		if len(j.written) != 2 || j.written[0][0].RequestID != "a" || len(j.written[1]) != 2 {
			t.Fatalf("written %+v, want [a] then [b c]", j.written)
		}
		if busy, _ := d.work.busy(); busy {
			t.Fatal("still retrying once all is stored")
		}
	})
}
