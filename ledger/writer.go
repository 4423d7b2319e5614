package ledger

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/llmfleet/llmfleet"
)

// DefaultBacklog is the most entries a Writer holds waiting for the store,
// unless told otherwise.
const DefaultBacklog = 100_000

// writeTimeout bounds one store call of a Writer.
const writeTimeout = time.Minute

// ErrWriterClosed is returned by Writer.Add once the writer is closed.
var ErrWriterClosed = errors.New("ledger: writer closed")

// Adder records ledger entries: the AddLedger method of a llmfleet.Store.
type Adder interface {
	AddLedger(ctx context.Context, entries []llmfleet.LedgerEntry) error
}

// RetryWait is how long a Writer waits before it writes again entries
// the store failed to record; the wait doubles at each failure in a row,
// up to MaxRetryWait.
const (
	RetryWait    = 500 * time.Millisecond
	MaxRetryWait = 30 * time.Second
)

// DefaultWindow is the group-commit window of the Writer of a Pipeline:
// how long the first entry of a group waits for others to go with it.
const DefaultWindow = 250 * time.Millisecond

// maxGroup is the most pending entries a windowed Writer waits with: it
// writes at once when so many are pending.
const maxGroup = 4096

// Writer records ledger entries in a store from a goroutine of its own,
// so that the hooks handing it entries do not wait for the disk while the
// store keeps up. The entries that arrive while a write is under way go
// out together in the next store call, after a window of their own: under
// a steady stream the store sees one call per window, not one per
// write. It holds at most its backlog of
// entries besides those of the write under way; when the backlog is full,
// Add waits for room rather than drop the entry. Entries the store fails
// to record (a full disk, a read-only database) are kept, first in line,
// and written again after a back-off (RetryWait, doubling up to
// MaxRetryWait) until the store takes them: each entry is written once,
// however long the store fails; only entries still unwritten when Close
// gives up are lost, and logged. Its methods are safe for concurrent use.
type Writer struct {
	store   Adder
	log     *slog.Logger
	backlog int
	window  time.Duration

	mu       sync.Mutex
	room     *sync.Cond // signalled when pending shrinks or the writer closes
	pending  []llmfleet.LedgerEntry
	spare    []llmfleet.LedgerEntry // the last written group's array, reused for pending
	added    uint64                 // entries accepted so far
	written  uint64                 // entries handled (written, or failed to write)
	progress chan struct{}          // closed and replaced when written advances
	closed   bool

	failures int // store failures in a row (guarded by mu)

	wake   chan struct{}
	hurry  chan struct{} // cuts a group window short: Flush, a full group
	stop   chan struct{}
	quit   chan struct{} // closed when Close gives up: stop retrying
	exited chan struct{}
}

// NewWriter starts a writer of entries to store. backlog is the most
// entries it holds waiting (0 or less: DefaultBacklog); log gets its
// warnings (nil: discarded). Close it to write what is left and stop.
func NewWriter(store Adder, backlog int, log *slog.Logger) *Writer {
	return NewGroupWriter(store, backlog, 0, log)
}

// NewGroupWriter is NewWriter with a group-commit window: an entry that
// finds the writer idle waits up to window for others, so that many go
// to the store in one call (one transaction), off the path of the
// callers of Add. A group is written at once when maxGroup entries are
// pending, when the backlog is full, at Flush and at Close. window 0 is
// NewWriter's behaviour: a write starts as soon as an entry arrives.
func NewGroupWriter(store Adder, backlog int, window time.Duration, log *slog.Logger) *Writer {
	if backlog <= 0 {
		backlog = DefaultBacklog
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	w := &Writer{
		store: store, log: log, backlog: backlog, window: window,
		progress: make(chan struct{}),
		wake:     make(chan struct{}, 1),
		hurry:    make(chan struct{}, 1),
		stop:     make(chan struct{}),
		quit:     make(chan struct{}),
		exited:   make(chan struct{}),
	}
	w.room = sync.NewCond(&w.mu)
	go w.loop()
	return w
}

// Add queues an entry to be written. It returns at once while the backlog
// has room; when it is full, Add blocks until the store has taken the
// entries ahead (backpressure: no entry is ever dropped for want of room),
// or until the writer closes. An entry given to a closed writer, or one
// that closes while Add waits, is not recorded: Add returns
// ErrWriterClosed.
func (w *Writer) Add(e llmfleet.LedgerEntry) error {
	w.mu.Lock()
	for !w.closed && len(w.pending) >= w.backlog {
		w.room.Wait()
	}
	if w.closed {
		w.mu.Unlock()
		return ErrWriterClosed
	}
	w.pending = append(w.pending, e)
	w.added++
	full := len(w.pending) >= min(maxGroup, w.backlog)
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
	if full {
		w.kick()
	}
	return nil
}

// kick cuts the group window under way short.
func (w *Writer) kick() {
	select {
	case w.hurry <- struct{}{}:
	default:
	}
}

// Flush waits until the entries added before it are written, or ctx ends.
func (w *Writer) Flush(ctx context.Context) error {
	w.mu.Lock()
	target := w.added
	for w.written < target {
		progress := w.progress
		w.mu.Unlock()
		w.kick() // each group the target needs goes without its window
		select {
		case <-progress:
		case <-ctx.Done():
			return ctx.Err()
		}
		w.mu.Lock()
	}
	w.mu.Unlock()
	return nil
}

// Close stops accepting entries (an Add still waiting for room returns
// ErrWriterClosed), writes those pending and stops the goroutine, waiting
// until ctx ends at most. Closing again returns nil at once.
func (w *Writer) Close(ctx context.Context) error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	w.room.Broadcast()
	w.mu.Unlock()
	close(w.stop)
	select {
	case <-w.exited:
		return nil
	case <-ctx.Done():
		close(w.quit)
		<-w.exited
		return ctx.Err()
	}
}

func (w *Writer) loop() {
	defer close(w.exited)
	for {
		select {
		case <-w.wake:
			if !w.wait() {
				w.writePending()
				return
			}
			if _, err := w.writeGroup(); err != nil && !w.backOff() {
				w.writePending()
				return
			}
		case <-w.stop:
			w.writePending()
			return
		}
	}
}

// backOff waits before entries the store failed to record are written
// again, and wakes the loop for them; false if the writer was closed
// meanwhile.
func (w *Writer) backOff() bool {
	w.mu.Lock()
	wait := min(RetryWait<<min(w.failures-1, 16), MaxRetryWait)
	w.mu.Unlock()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
	case <-w.stop:
		return false
	}
	select {
	case w.wake <- struct{}{}:
	default:
	}
	return true
}

// wait waits out the group window, if any, or until it is cut short; it
// returns false if the writer was closed meanwhile.
func (w *Writer) wait() bool {
	if w.window <= 0 {
		return true
	}
	t := time.NewTimer(w.window)
	defer t.Stop()
	select {
	case <-t.C:
	case <-w.hurry:
	case <-w.stop:
		return false
	}
	return true
}

// writePending writes every pending entry, those that arrive meanwhile
// included, one store call per group, trying failed writes again until
// they succeed or Close gives up (the entries left are then logged as
// lost).
func (w *Writer) writePending() {
	for {
		had, err := w.writeGroup()
		if !had {
			return
		}
		if err == nil {
			continue
		}
		w.mu.Lock()
		wait := min(RetryWait<<min(w.failures-1, 16), MaxRetryWait)
		w.mu.Unlock()
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-w.quit:
			t.Stop()
			w.mu.Lock()
			lost := len(w.pending)
			w.mu.Unlock()
			w.log.Error("ledger entries lost: the store did not take them before the writer closed", "entries", lost)
			return
		}
	}
}

// writeGroup writes the entries pending now in one store call and
// reports whether there were any, and the store's error: entries it
// failed to record go back first in line, to be written again. Those
// that arrive meanwhile wait for the loop's next window (it is woken by
// their Add), so that under a steady stream a window still gathers a
// window's entries rather than one write's worth.
func (w *Writer) writeGroup() (bool, error) {
	w.mu.Lock()
	batch := w.pending
	w.pending, w.spare = w.spare, nil
	w.room.Broadcast()
	w.mu.Unlock()
	if len(batch) == 0 {
		return false, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	err := w.store.AddLedger(ctx, batch)
	cancel()
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		w.failures++
		w.log.Warn("ledger entries not stored; will retry", "entries", len(batch), "failures", w.failures, "err", err)
		w.pending = append(batch, w.pending...)
		return true, err
	}
	w.failures = 0
	clear(batch) // no entry outlives its write through the reused array
	if w.pending == nil {
		w.pending = batch[:0]
	} else {
		w.spare = batch[:0]
	}
	w.written += uint64(len(batch))
	close(w.progress)
	w.progress = make(chan struct{})
	return true, nil
}
