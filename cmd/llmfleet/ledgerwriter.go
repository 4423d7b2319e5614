package main

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/llmfleet/llmfleet"
)

// defaultLedgerBacklog is the most ledger entries a ledgerWriter holds
// before it drops new ones.
const defaultLedgerBacklog = 100_000

// ledgerWriter records ledger entries in a Store from a goroutine of its
// own, so that the hooks handing it entries (the dispatcher calls its
// Observe with its lock held) never wait for the disk. Entries that arrive
// while a write is under way go out together in the next one. Call start
// before Add, and Close to write what is left and stop.
type ledgerWriter struct {
	store   llmfleet.Store
	log     *slog.Logger
	backlog int // most entries held; 0 means defaultLedgerBacklog

	mu       sync.Mutex
	pending  []llmfleet.LedgerEntry
	added    uint64        // entries accepted so far
	written  uint64        // entries handled (written, or failed to write)
	progress chan struct{} // closed and replaced when written advances
	dropped  int64         // entries dropped, not yet reported
	closed   bool

	wake   chan struct{}
	stop   chan struct{}
	exited chan struct{}
}

// start starts the writer's goroutine.
func (w *ledgerWriter) start() {
	if w.backlog <= 0 {
		w.backlog = defaultLedgerBacklog
	}
	if w.log == nil {
		w.log = slog.New(slog.DiscardHandler)
	}
	w.progress = make(chan struct{})
	w.wake = make(chan struct{}, 1)
	w.stop = make(chan struct{})
	w.exited = make(chan struct{})
	go w.loop()
}

// Add queues an entry to be written. It never blocks: when the backlog is
// full, or the writer closed, the entry is dropped (and counted in a
// warning).
func (w *ledgerWriter) Add(e llmfleet.LedgerEntry) {
	w.mu.Lock()
	if w.closed || len(w.pending) >= w.backlog {
		w.dropped++
		w.mu.Unlock()
		return
	}
	w.pending = append(w.pending, e)
	w.added++
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Flush waits until the entries added before it are written, or ctx ends.
func (w *ledgerWriter) Flush(ctx context.Context) error {
	w.mu.Lock()
	target := w.added
	for w.written < target {
		progress := w.progress
		w.mu.Unlock()
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

// Close stops accepting entries, writes those pending and stops the
// goroutine, waiting until ctx ends at most.
func (w *ledgerWriter) Close(ctx context.Context) error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	w.mu.Unlock()
	close(w.stop)
	select {
	case <-w.exited:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (w *ledgerWriter) loop() {
	defer close(w.exited)
	for {
		select {
		case <-w.wake:
			w.writePending()
		case <-w.stop:
			w.writePending()
			return
		}
	}
}

// writePending writes every pending entry.
func (w *ledgerWriter) writePending() {
	for {
		w.mu.Lock()
		batch, dropped := w.pending, w.dropped
		w.pending, w.dropped = nil, 0
		w.mu.Unlock()
		if dropped > 0 {
			w.log.Warn("ledger entries dropped: the store is not keeping up", "entries", dropped)
		}
		if len(batch) == 0 {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if err := w.store.AddLedger(ctx, batch); err != nil {
			w.log.Warn("ledger entries not stored", "entries", len(batch), "err", err)
		}
		cancel()
		w.mu.Lock()
		w.written += uint64(len(batch))
		close(w.progress)
		w.progress = make(chan struct{})
		w.mu.Unlock()
	}
}
