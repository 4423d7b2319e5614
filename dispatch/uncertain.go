package dispatch

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/llmfleet/llmfleet"
)

// uncertain reports whether a failed create call leaves open whether the
// batch was created: only an error answer of the provider proves it was
// not.
func uncertain(err error) bool {
	var pe *llmfleet.Error
	return !errors.As(err, &pe)
}

// resolveAttempts is how many times an uncertain create is looked up in
// the provider's list before its callers are given up on; the waits
// between attempts double from Policy.PollInterval.
const resolveAttempts = 6

// resolveUncertain finds out what became of a create call that failed
// without an answer. It lists the credential's batches as a restart would
// (see reconcile): a match is adopted and tracked; a list that shows none
// proves the batch was not created, and its requests go back into their
// pool to be sent again, so nothing is paid twice. If the list cannot be
// read after resolveAttempts tries, the waiting callers get the create's
// error; with a Store the intent stays recorded, so the next start
// reconciles it again and the tickets still get their answers.
func (d *Dispatcher) resolveUncertain(prov llmfleet.Provider, first *llmfleet.Request, batchID string, intentAt time.Time, ws []*waiter, cause error) {
	pb := &llmfleet.PendingBatch{Batch: llmfleet.StoredBatch{ID: batchID, Provider: prov.Name(), Size: len(ws), IntentAt: intentAt}}
	for _, w := range ws {
		pb.Requests = append(pb.Requests, &llmfleet.StoredRequest{ID: w.id, CustomID: w.customID})
	}
	wait := d.pol.PollInterval
	var lastErr error
	for range resolveAttempts {
		if !d.sleep(wait) {
			d.giveUp(ws, llmfleet.ErrClosed)
			return
		}
		wait *= 2
		ctx, cancel := context.WithTimeout(d.ctx, pollTimeout)
		found, err := d.reconcile(ctx, prov, first.Credential, pb, d.knownBatches())
		cancel()
		if err != nil {
			lastErr = err
			d.log.Warn("reconciling an uncertain create failed; will retry", "batch", batchID, "err", err)
			continue
		}
		if found != nil {
			d.recordCreated(d.ctx, batchID, found)
			d.log.Info("uncertain create adopted", "batch", batchID, "batch_id", found.ID)
			d.mu.Lock()
			d.submittedLocked(prov, first.Credential, batchID, found, ws)
			d.endWorkLocked()
			d.mu.Unlock()
			return
		}
		d.requeue(prov, batchID, ws)
		return
	}
	d.log.Error("uncertain create could not be reconciled", "batch", batchID, "requests", len(ws), "err", lastErr)
	d.giveUp(ws, fmt.Errorf("llmfleet: batch create failed and could not be reconciled (%v): %w", lastErr, cause))
}

// sleep waits on the dispatcher's clock; false if the dispatcher closed
// first.
func (d *Dispatcher) sleep(wait time.Duration) bool {
	tick := make(chan struct{})
	t := d.clock.AfterFunc(wait, func() { close(tick) })
	select {
	case <-tick:
		return true
	case <-d.ctx.Done():
		t.Stop()
		return false
	}
}

// knownBatches returns the provider ids of the batches being tracked.
func (d *Dispatcher) knownBatches() map[string]bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	known := map[string]bool{}
	for _, t := range d.trackers {
		for id := range t.batches {
			known[id] = true
		}
	}
	return known
}

// requeue puts the requests of a batch that was proven not created back
// into their pool.
func (d *Dispatcher) requeue(prov llmfleet.Provider, batchID string, ws []*waiter) {
	d.log.Info("uncertain create was not created; requeueing", "batch", batchID, "requests", len(ws))
	if d.Store != nil {
		if err := d.Store.RecordCreateFailed(d.ctx, batchID, true); err != nil {
			d.log.Error("requeue not stored", "batch", batchID, "err", err)
		}
	}
	for _, w := range ws {
		d.mu.Lock()
		drop := w.abandoned && d.Store == nil // nobody will read its answer
		if drop {
			d.finishLocked(w, nil, context.Canceled)
		}
		w.customID = ""
		d.mu.Unlock()
		if drop {
			continue
		}
		if err := d.enqueue(prov, w); err != nil {
			d.mu.Lock()
			d.finishLocked(w, nil, err)
			d.mu.Unlock()
		}
	}
	d.mu.Lock()
	d.endWorkLocked()
	d.mu.Unlock()
}

// giveUp answers the waiters of an unresolved create with err. The stored
// requests are left as they are, for the next start to reconcile.
func (d *Dispatcher) giveUp(ws []*waiter, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, w := range ws {
		d.finishLocked(w, nil, err)
	}
	d.endWorkLocked()
}
