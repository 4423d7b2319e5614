package dispatch

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/llmfleet/llmfleet"
)

// recover picks up what a previous process left in the Store: created
// batches are tracked again, intents go to the reconciler (as a create
// that failed without an answer: nothing is concluded before its
// deadline has passed), and queued requests are pooled again, together.
// With a SharedStore it picks up what no live replica owns (Adopt).
func (d *Dispatcher) recover(ctx context.Context, store llmfleet.Store) error {
	samples, err := store.Turnarounds(ctx, d.pol.TurnaroundSamples)
	if err != nil {
		return err
	}
	for _, s := range samples { // oldest first
		if !d.pol.NoLearning {
			d.predictor.observe(s.Provider, s.Model, s.Turnaround)
		}
	}
	d.relearnCache(ctx)
	var queued []*llmfleet.StoredRequest
	var batches []*llmfleet.PendingBatch
	if d.shared != nil {
		queued, batches, err = d.shared.Adopt(ctx)
	} else {
		queued, batches, err = store.Pending(ctx)
	}
	if err != nil {
		return err
	}
	return d.pickUp(ctx, store, queued, batches)
}

// pickUp takes charge of stored requests and batches no process of the
// fleet waits for: at start, and with a SharedStore whenever a replica's
// lease ended. A request waiting here for another replica's answer
// (elsewhere) is the one picked up, its caller still waiting.
func (d *Dispatcher) pickUp(ctx context.Context, store llmfleet.Store, queued []*llmfleet.StoredRequest, batches []*llmfleet.PendingBatch) error {
	creds := map[string]llmfleet.Credential{}
	credential := func(id string) (llmfleet.Credential, error) {
		if c, ok := creds[id]; ok {
			return c, nil
		}
		sealed, err := store.GetCredential(ctx, id)
		if err != nil {
			return llmfleet.Credential{}, fmt.Errorf("credential %s: %w", id, err)
		}
		c, err := d.Sealer.Unseal(id, sealed)
		if err != nil {
			return llmfleet.Credential{}, fmt.Errorf("credential %s: %w", id, err)
		}
		creds[id] = c
		if sj, ok := d.journal.(*storeJournal); ok {
			sj.markSealed(id)
		}
		return c, nil
	}
	revive := func(r *llmfleet.StoredRequest) (*waiter, error) {
		d.mu.Lock()
		w := d.reuseLocked(r.ID)
		d.mu.Unlock()
		if w == nil {
			cred, err := credential(r.CredentialID)
			if err != nil {
				return nil, err
			}
			d.mu.Lock()
			w, err = d.reviveLocked(r, cred)
			d.mu.Unlock()
			if err != nil {
				return nil, err
			}
		}
		d.mu.Lock()
		w.customID = r.CustomID
		d.mu.Unlock()
		return w, nil
	}

	d.mu.Lock()
	for _, pb := range batches {
		if pb.Batch.UpstreamID != "" {
			d.knownIDs[pb.Batch.UpstreamID] = true
		}
	}
	d.mu.Unlock()
	sort.Slice(batches, func(i, j int) bool { return batches[i].Batch.IntentAt.Before(batches[j].Batch.IntentAt) })
	for _, pb := range batches {
		sb := pb.Batch
		d.mu.Lock()
		here := d.creating[sb.ID] || d.trackedLocked(sb.UpstreamID)
		d.mu.Unlock()
		if here {
			continue // its create, or its flight, is under way here already
		}
		if len(pb.Requests) == 0 {
			// Every request of it was answered before the crash.
			mark := store.ResolveBatch
			if sb.State == llmfleet.BatchIntent {
				mark = func(ctx context.Context, id string) error { return store.RecordCreateFailed(ctx, id, false) }
			}
			if err := mark(ctx, sb.ID); err != nil {
				return err
			}
			continue
		}
		var ws []*waiter
		for _, r := range pb.Requests {
			w, err := revive(r)
			if err != nil {
				d.log.Error("stored request cannot be recovered", "request_id", r.ID, "err", err)
				continue
			}
			ws = append(ws, w)
		}
		if len(ws) == 0 {
			// Its credential cannot be unsealed (another secret?): keep
			// the batch pending, for a start that can.
			d.log.Error("stored batch cannot be recovered; kept for the next start", "batch", sb.ID, "requests", len(pb.Requests))
			continue
		}
		c := &createCall{localID: sb.ID, prov: ws[0].prov, first: ws[0].req, ws: ws, intentAt: sb.IntentAt, deadline: sb.CreateDeadline}
		if c.deadline.IsZero() {
			c.deadline = sb.IntentAt.Add(d.pol.CreateTimeout)
		}
		d.mu.Lock()
		if sb.State == llmfleet.BatchIntent {
			for _, w := range ws {
				w.must(stateReconciling, d.log)
			}
			d.creating[sb.ID] = true
			d.work.begin()
			d.work.run(func() { d.reconcile(c) })
			d.log.Info("batch intent to reconcile", "batch", sb.ID, "requests", len(ws), "create_deadline", c.deadline)
		} else {
			for _, w := range ws {
				w.must(stateSubmitting, d.log)
			}
			b := &llmfleet.Batch{ID: sb.UpstreamID, Status: llmfleet.BatchInProgress, CreatedAt: sb.CreatedAt}
			d.trackLocked(c.prov, c.first.Credential, sb.ID, b, ws)
			d.log.Info("batch in flight recovered", "batch_id", b.ID, "requests", len(ws))
		}
		d.mu.Unlock()
	}
	for _, r := range queued {
		if r.State == llmfleet.RequestSubmitted {
			if err := d.interrupted(ctx, store, r); err != nil {
				return err
			}
			continue
		}
		w, err := revive(r)
		if err != nil {
			// Kept queued, for a start that can unseal its credential.
			d.log.Error("stored request cannot be recovered", "request_id", r.ID, "err", err)
			continue
		}
		if err = d.checkSize(w); err == nil {
			d.mu.Lock()
			err = d.enqueueLocked(w)
			d.mu.Unlock()
		}
		if errors.Is(err, llmfleet.ErrClosed) {
			// Closing: it stays queued, for the replica that adopts it
			// once this one's lease ends (or the next start).
			d.mu.Lock()
			d.answers.finishLocked(w, nil, err, nil)
			d.mu.Unlock()
			continue
		}
		if err != nil {
			d.log.Error("stored request cannot be queued again; answering it with the error", "request_id", r.ID, "err", err)
			now := d.clock.Now()
			done := []llmfleet.Completion{{RequestID: r.ID, Result: storedResult(nil, err, now)}}
			if _, err := store.CompleteRequests(ctx, done); err != nil {
				return err
			}
		}
	}
	if n := len(queued) + len(batches); n > 0 {
		d.log.Info("picked up stored state", "queued", len(queued), "batches", len(batches))
	}
	return nil
}

// purgeLoop deletes stored results older than the retention period, once
// at start and then hourly, until the dispatcher closes.
func (d *Dispatcher) purgeLoop(store llmfleet.Store) {
	for {
		now := d.clock.Now()
		n, err := store.Purge(d.ctx, now.Add(-d.Retention), now.Add(-d.LedgerRetention))
		if err != nil && d.ctx.Err() == nil {
			d.log.Warn("purge failed", "err", err)
		} else if n > 0 {
			d.log.Info("purged old results", "records", n)
		}
		if !d.sleep(time.Hour) {
			return
		}
	}
}

// errInterrupted answers a request that was sent sync at once by a
// process that ended before storing its answer.
var errInterrupted = errors.New("llmfleet: the request's sync call was cut when the process making it ended; " +
	"it may have been billed, so it is not sent again: send it again if you still need its answer")

// interrupted answers, with errInterrupted, a stored request that was
// sent sync at once by a process that ended before its answer was stored
// (Pending and Adopt return it among the queued ones, submitted): its
// call may have been billed, so sending it again could pay twice. One
// whose call is under way in this process (a run of it whose lease ended
// and that adopts its own) is left to that call.
func (d *Dispatcher) interrupted(ctx context.Context, store llmfleet.Store, r *llmfleet.StoredRequest) error {
	d.mu.Lock()
	w := d.ids.live[r.ID]
	mine := w != nil && w.sentSync
	d.mu.Unlock()
	if mine {
		return nil
	}
	d.log.Warn("request sent sync by an ended process; answering it with the interruption, not sending it again", "request_id", r.ID)
	done := []llmfleet.Completion{{RequestID: r.ID, Result: storedResult(nil, errInterrupted, d.clock.Now())}}
	_, err := store.CompleteRequests(ctx, done)
	return err
}
