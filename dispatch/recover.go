package dispatch

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/llmfleet/llmfleet"
)

// adopter takes charge of what the Store holds that no process waits
// for: at start, and what replicas whose lease ended owned; and purges
// old results.
type adopter struct {
	d *Dispatcher
}

// recover picks up what a previous process left in the Store: created
// batches are tracked again, intents go to the reconciler (as a create
// that failed without an answer: nothing is concluded before its
// deadline has passed), and queued requests are pooled again, together.
// With a SharedStore it picks up what no live replica owns (Adopt).
func (rv *adopter) recover(ctx context.Context, store llmfleet.Store) error {
	d := rv.d
	samples, err := store.Turnarounds(ctx, d.pol.TurnaroundSamples)
	if err != nil {
		return err
	}
	for _, s := range samples { // oldest first
		if !d.pol.NoLearning {
			d.predictor.observe(s.Provider, s.Model, s.Turnaround)
		}
	}
	d.cache.relearnCache(ctx)
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
	return rv.pickUp(ctx, store, queued, batches)
}

// pickUp takes charge of stored requests and batches no process of the
// fleet waits for: at start, and with a SharedStore whenever a replica's
// lease ended. A request waiting here for another replica's answer
// (elsewhere) is the one picked up, its caller still waiting.
func (rv *adopter) pickUp(ctx context.Context, store llmfleet.Store, queued []*llmfleet.StoredRequest, batches []*llmfleet.PendingBatch) error {
	d := rv.d
	p := &pickup{d: d, ctx: ctx, store: store, creds: map[string]llmfleet.Credential{}}
	if err := p.batches(batches); err != nil {
		return err
	}
	for _, r := range queued {
		if err := p.queued(r); err != nil {
			return err
		}
	}
	if n := len(queued) + len(batches); n > 0 {
		d.log.Info("picked up stored state", "queued", len(queued), "batches", len(batches))
	}
	return nil
}

// pickup is one run of pickUp: the store it reads and the credentials it
// unsealed.
type pickup struct {
	d     *Dispatcher
	ctx   context.Context
	store llmfleet.Store
	creds map[string]llmfleet.Credential // by credential id
}

// credential returns the unsealed credential of a stored id.
func (p *pickup) credential(id string) (llmfleet.Credential, error) {
	if c, ok := p.creds[id]; ok {
		return c, nil
	}
	sealed, err := p.store.GetCredential(p.ctx, id)
	if err != nil {
		return llmfleet.Credential{}, fmt.Errorf("credential %s: %w", id, err)
	}
	c, err := p.d.Sealer.Unseal(id, sealed)
	if err != nil {
		return llmfleet.Credential{}, fmt.Errorf("credential %s: %w", id, err)
	}
	p.creds[id] = c
	if sj, ok := p.d.journal.(*storeJournal); ok {
		sj.markSealed(id)
	}
	return c, nil
}

// revive returns the waiter of a stored request: this process's own
// (queued here or waiting elsewhere), or a new one with no caller.
func (p *pickup) revive(r *llmfleet.StoredRequest) (*waiter, error) {
	d := p.d
	d.mu.Lock()
	w := d.recovery.reuseLocked(r.ID)
	d.mu.Unlock()
	if w == nil {
		cred, err := p.credential(r.CredentialID)
		if err != nil {
			return nil, err
		}
		d.mu.Lock()
		w, err = d.recovery.reviveLocked(r, cred)
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

// batches takes charge of stored batches, oldest intent first: created
// ones are tracked again, intents reconciled.
func (p *pickup) batches(batches []*llmfleet.PendingBatch) error {
	d := p.d
	d.mu.Lock()
	for _, pb := range batches {
		if pb.Batch.UpstreamID != "" {
			d.trackers.knownIDs[pb.Batch.UpstreamID] = true
		}
	}
	d.mu.Unlock()
	sort.Slice(batches, func(i, j int) bool { return batches[i].Batch.IntentAt.Before(batches[j].Batch.IntentAt) })
	for _, pb := range batches {
		if err := p.batch(pb); err != nil {
			return err
		}
	}
	return nil
}

// batch takes charge of one stored batch, unless its create or its
// flight is under way here already.
func (p *pickup) batch(pb *llmfleet.PendingBatch) error {
	d, sb := p.d, pb.Batch
	d.mu.Lock()
	// By its local id too: adopted as an intent, it may have been
	// created and tracked here since (creator.created).
	here := d.creates.creating[sb.ID] || d.trackers.flyingLocked(sb.ID, sb.UpstreamID)
	d.mu.Unlock()
	if here {
		return nil
	}
	if len(pb.Requests) == 0 && len(pb.Answered) == 0 {
		// Every request of it was answered before the crash.
		if sb.State == llmfleet.BatchIntent {
			return p.store.RecordCreateFailed(p.ctx, sb.ID, false)
		}
		return p.store.ResolveBatch(p.ctx, sb.ID)
	}
	var ws []*waiter
	// Its requests answered by a rescue are tracked too (an intent's
	// reconciled: its create may have landed): their results, paid, are
	// recorded late when delivered (answerer.second).
	for i, r := range append(pb.Requests[:len(pb.Requests):len(pb.Requests)], pb.Answered...) {
		w, err := p.revive(r)
		if err != nil {
			d.log.Error("stored request cannot be recovered", "request_id", r.ID, "err", err)
			continue
		}
		if i >= len(pb.Requests) {
			d.mu.Lock()
			w.answered = true
			d.mu.Unlock()
		}
		ws = append(ws, w)
	}
	if len(ws) == 0 {
		// Its credential cannot be unsealed (another secret?): keep
		// the batch pending, for a start that can.
		d.log.Error("stored batch cannot be recovered; kept for the next start", "batch", sb.ID, "requests", len(pb.Requests))
		return nil
	}
	c := &createCall{localID: sb.ID, prov: ws[0].prov, first: ws[0].req, ws: ws, intentAt: sb.IntentAt, deadline: sb.CreateDeadline}
	if c.deadline.IsZero() {
		c.deadline = sb.IntentAt.Add(d.pol.CreateTimeout)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if sb.State == llmfleet.BatchIntent {
		for _, w := range ws {
			w.must(stateReconciling, d.log)
		}
		d.creates.creating[sb.ID] = true
		d.work.begin()
		d.work.run(func() { d.reconciler.reconcile(c) })
		d.log.Info("batch intent to reconcile", "batch", sb.ID, "requests", len(ws), "create_deadline", c.deadline)
		return nil
	}
	for _, w := range ws {
		w.must(stateSubmitting, d.log)
	}
	b := &llmfleet.Batch{ID: sb.UpstreamID, Status: llmfleet.BatchInProgress, CreatedAt: sb.CreatedAt}
	d.trackers.trackLocked(c.prov, c.first.Credential, sb.ID, b, ws)
	d.log.Info("batch in flight recovered", "batch_id", b.ID, "requests", len(ws))
	return nil
}

// queued takes charge of one stored queued request: it is pooled again,
// or answered with why it cannot be.
func (p *pickup) queued(r *llmfleet.StoredRequest) error {
	d := p.d
	if r.State == llmfleet.RequestSubmitted {
		return d.recovery.interrupted(p.ctx, p.store, r)
	}
	w, err := p.revive(r)
	if err != nil {
		// Kept queued, for a start that can unseal its credential.
		d.log.Error("stored request cannot be recovered", "request_id", r.ID, "err", err)
		return nil
	}
	if err = d.pools.checkSize(w); err == nil {
		d.mu.Lock()
		err = d.pools.enqueueLocked(w)
		d.mu.Unlock()
	}
	switch {
	case errors.Is(err, llmfleet.ErrClosed):
		// Closing: it stays queued, for the replica that adopts it
		// once this one's lease ends (or the next start).
		d.mu.Lock()
		d.answers.finishLocked(w, nil, err, nil)
		d.mu.Unlock()
	case err != nil:
		d.log.Error("stored request cannot be queued again; answering it with the error", "request_id", r.ID, "err", err)
		done := []llmfleet.Completion{{RequestID: r.ID, Result: storedResult(nil, err, d.clock.Now())}}
		if _, err := p.store.CompleteRequests(p.ctx, done); err != nil {
			return err
		}
	}
	return nil
}

// purgeLoop deletes stored results older than the retention period, once
// at start and then hourly, until the dispatcher closes.
func (rv *adopter) purgeLoop(store llmfleet.Store) {
	d := rv.d
	for {
		now := d.clock.Now()
		n, err := store.Purge(d.ctx, now.Add(-d.Retention), now.Add(-d.LedgerRetention))
		if err != nil && d.ctx.Err() == nil {
			d.log.Warn("purge failed", "err", err)
		} else if n > 0 {
			d.log.Info("purged old results", "records", n)
		}
		if llmfleet.Sleep(d.ctx, d.clock, time.Hour) != nil {
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
func (rv *adopter) interrupted(ctx context.Context, store llmfleet.Store, r *llmfleet.StoredRequest) error {
	d := rv.d
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
