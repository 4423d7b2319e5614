package ledger

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmfleet/llmfleet"
)

// gatedStore records the entries of each AddLedger call, after waiting
// for gate if it is set.
type gatedStore struct {
	gate   chan struct{}
	fail   error
	fails  int // calls that fail with fail (0: every call, if fail is set)
	mu     sync.Mutex
	writes [][]string // the models of each call
}

func (s *gatedStore) AddLedger(ctx context.Context, entries []llmfleet.LedgerEntry) error {
	if s.gate != nil {
		<-s.gate
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var models []string
	for _, e := range entries {
		models = append(models, e.Model)
	}
	s.writes = append(s.writes, models)
	if s.fails > 0 {
		s.fails--
		if s.fails == 0 {
			defer func() { s.fail = nil }()
		}
	}
	return s.fail
}

// calls returns the models of each call, joined: "a|b,c,d".
func (s *gatedStore) calls() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, w := range s.writes {
		out = append(out, strings.Join(w, ","))
	}
	return strings.Join(out, "|")
}

// syncBuffer is a bytes.Buffer safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func add(t *testing.T, w *Writer, models ...string) {
	t.Helper()
	for _, m := range models {
		if err := w.Add(llmfleet.LedgerEntry{Model: m}); err != nil {
			t.Fatalf("Add(%s): %v", m, err)
		}
	}
}

// TestWriterCoalesces checks that the entries arriving while a write is
// under way go out together in the next store call, and that Flush waits
// for them.
func TestWriterCoalesces(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &gatedStore{gate: make(chan struct{})}
		w := NewWriter(st, 0, nil)
		add(t, w, "a")
		synctest.Wait() // the first write took it, and waits at the gate
		add(t, w, "b", "c", "d")
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := w.Flush(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("Flush with the writes held: %v", err)
		}
		close(st.gate)
		if err := w.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := st.calls(); got != "a|b,c,d" {
			t.Fatalf("store calls %q, want a|b,c,d", got)
		}
		add(t, w, "e")
		if err := w.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := st.calls(); got != "a|b,c,d|e" {
			t.Fatalf("Close left entries unwritten: %q", got)
		}
		if err := w.Add(llmfleet.LedgerEntry{Model: "late"}); !errors.Is(err, ErrWriterClosed) {
			t.Fatalf("Add after Close: %v", err)
		}
		if err := w.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

// TestWriterBackpressure checks that a full backlog makes Add wait for
// room instead of dropping the entry.
func TestWriterBackpressure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &gatedStore{gate: make(chan struct{})}
		w := NewWriter(st, 3, nil)
		add(t, w, "a")
		synctest.Wait() // "a" is being written, held at the gate
		add(t, w, "b", "c", "d")
		added := make(chan error, 1)
		go func() { added <- w.Add(llmfleet.LedgerEntry{Model: "e"}) }()
		synctest.Wait()
		select {
		case err := <-added:
			t.Fatalf("Add returned with the backlog full: %v", err)
		default:
		}
		close(st.gate)
		if err := <-added; err != nil {
			t.Fatal(err)
		}
		if err := w.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := st.calls(); got != "a|b,c,d|e" {
			t.Fatalf("store calls %q, want a|b,c,d|e", got)
		}
	})
}

// TestWriterCloseReleasesAdd checks that an Add waiting for room returns
// when the writer closes, and that what was accepted is still written.
func TestWriterCloseReleasesAdd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &gatedStore{gate: make(chan struct{})}
		w := NewWriter(st, 1, nil)
		add(t, w, "a")
		synctest.Wait()
		add(t, w, "b")
		added := make(chan error, 1)
		go func() { added <- w.Add(llmfleet.LedgerEntry{Model: "c"}) }()
		synctest.Wait()
		closed := make(chan error, 1)
		go func() { closed <- w.Close(context.Background()) }()
		if err := <-added; !errors.Is(err, ErrWriterClosed) {
			t.Fatalf("the waiting Add returned %v, want ErrWriterClosed", err)
		}
		close(st.gate)
		if err := <-closed; err != nil {
			t.Fatal(err)
		}
		if got := st.calls(); got != "a|b" {
			t.Fatalf("store calls %q, want a|b", got)
		}
	})
}

// TestWriterStoreFailure checks that entries the store fails to record
// (a full disk) are logged, kept and written again, once each, when the
// store takes them; Flush waits until then.
func TestWriterStoreFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs := &syncBuffer{}
		st := &gatedStore{fail: errors.New("disk full"), fails: 3}
		w := NewWriter(st, 0, slog.New(slog.NewTextHandler(logs, nil)))
		add(t, w, "a")
		add(t, w, "b")
		if err := w.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		w.Close(context.Background())
		if !strings.Contains(logs.String(), "disk full") {
			t.Fatalf("store failure not logged: %s", logs)
		}
		calls := strings.Split(st.calls(), "|")
		if len(calls) < 4 || calls[len(calls)-1] != "a,b" && calls[len(calls)-1] != "b" {
			t.Fatalf("store calls %q: want three failed writes, then the entries written", st.calls())
		}
		written := map[string]int{}
		for _, c := range calls[3:] {
			for _, m := range strings.Split(c, ",") {
				written[m]++
			}
		}
		if written["a"] != 1 || written["b"] != 1 {
			t.Fatalf("store calls %q: after the failures, each entry written once", st.calls())
		}
	})
}

// TestWriterCloseGivesUp checks that Close, while the store still fails,
// returns once its context ends, and logs the entries lost.
func TestWriterCloseGivesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs := &syncBuffer{}
		w := NewWriter(&gatedStore{fail: errors.New("read-only")}, 0, slog.New(slog.NewTextHandler(logs, nil)))
		add(t, w, "a")
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := w.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Close = %v, want the context's deadline", err)
		}
		if !strings.Contains(logs.String(), "ledger entries lost") {
			t.Fatalf("lost entries not logged: %s", logs)
		}
	})
}
