package dispatch

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/llmfleet/llmfleet"
)

// creator makes the batch creates: it owns the local ids of those under
// way here (creates and reconciliations), which an adoption must not
// pick up a second time.
type creator struct {
	d        *Dispatcher
	creating map[string]bool // guarded by the dispatcher's lock
}

// createCall is one batch create: its local id (the tag), its requests
// and what became of the call.
type createCall struct {
	localID string
	prov    llmfleet.Provider
	first   *llmfleet.Request // credential and headers
	ws      []*waiter
	items   []llmfleet.BatchItem

	intentAt   time.Time // when the intent was recorded
	deadline   time.Time // the create call's deadline
	answeredAt time.Time // when an uncertain failure was answered (zero: no answer)
}

// create records the intent, makes the create call and hands the batch
// to its tracker. A create the provider refused, or that never reached it,
// fails its requests at once; one that may or may not have made the batch
// goes to the reconciler, which never sends it again unless the batch is
// proven not created.
func (cr *creator) create(c *createCall) {
	d := cr.d
	c.intentAt = d.clock.Now()
	c.deadline = c.intentAt.Add(d.pol.CreateTimeout)
	sb := &llmfleet.StoredBatch{
		ID: c.localID, Provider: c.prov.Name(), CredentialID: d.fingerprint(c.first.Credential),
		State: llmfleet.BatchIntent, Size: len(c.ws), IntentAt: c.intentAt, CreateDeadline: c.deadline,
	}
	if err := d.journal.intent(d.ctx, sb, c.ws); err != nil {
		cr.createFailed(c, err, false)
		return
	}
	cr.send(c)
}

// send makes the create call of a batch whose intent is recorded and
// hands the batch to its tracker, or its requests to the reconciler or
// their error.
//
// The call is bounded by the create's deadline, which its intent records:
// once it has passed the create can no longer land (a replica that
// adopted the intent may conclude so), so a create not sent by then (a
// process paused, say) is never sent, and goes to the reconciler as one
// that failed without an answer.
func (cr *creator) send(c *createCall) {
	d := cr.d
	left := c.deadline.Sub(d.clock.Now())
	if left <= 0 {
		d.log.Warn("batch create not sent before its deadline; reconciling", "batch", c.localID, "requests", len(c.ws))
		d.mu.Lock()
		for _, w := range c.ws {
			w.advance(stateReconciling, d.log)
		}
		d.mu.Unlock()
		d.reconciler.reconcile(c)
		return
	}
	ctx, cancel := withTimeout(d.clock, d.ctx, left)
	ctx, span := d.traces.batch(ctx, "create", c.prov, waiterLinks(slices.Values(c.ws)), batchSize(len(c.ws)))
	d.stats.managementCalls.Add(1)
	b, err := c.prov.CreateBatch(ctx, c.first.Credential, c.localID, c.first.Header, c.items)
	cancel()
	endBatch(span, err, createdID(b)...)
	var ue *llmfleet.UncertainError
	switch {
	case err != nil && d.ctx.Err() != nil:
		// Closing cut the call short: nothing is concluded, the intent
		// stays stored for the next start to reconcile.
		cr.abandon(c)
	case err == nil:
		cr.created(c, b)
	case errors.As(err, &ue):
		if ue.Answered {
			c.answeredAt = d.clock.Now()
		}
		d.log.Warn("batch create may or may not have made the batch; reconciling", "provider", c.prov.Name(),
			"batch", c.localID, "credential", credLabel(d.Sealer, c.first.Credential), "requests", len(c.ws), "answered", ue.Answered, "err", err)
		d.mu.Lock()
		for _, w := range c.ws {
			w.advance(stateReconciling, d.log)
		}
		d.mu.Unlock()
		d.reconciler.reconcile(c)
	default:
		cr.createFailed(c, err, true)
	}
}

// createFailed answers the requests of a create that certainly did not
// make the batch (refused, or never delivered) with its error, stored
// with their ledger entries. recorded says whether the intent was stored.
func (cr *creator) createFailed(c *createCall, err error, recorded bool) {
	d := cr.d
	d.log.Warn("batch create failed", "provider", c.prov.Name(), "batch", c.localID,
		"credential", credLabel(d.Sealer, c.first.Credential), "requests", len(c.ws), "err", err)
	cause := fmt.Errorf("llmfleet: batch create failed: %w", err)
	answers := make([]answer, len(c.ws))
	for i, w := range c.ws {
		answers[i] = answer{w: w, err: cause}
	}
	if recorded {
		if !d.answers.deliver(answers, "", nil) {
			d.mu.Lock()
			delete(cr.creating, c.localID) // (an adoption may reconcile it)
			d.work.end()
			d.mu.Unlock()
			return // not stored: the intent stays for the next start
		}
		if jerr := d.journal.failed(d.ctx, c.localID); jerr != nil {
			d.log.Error("failed create not marked", "batch", c.localID, "err", jerr)
		}
	} else {
		// Nothing of the batch is stored: its requests are still queued
		// in the store; fail the callers, the next start sends them.
		d.mu.Lock()
		for _, w := range c.ws {
			d.answers.finishLocked(w, nil, cause, nil)
		}
		d.mu.Unlock()
	}
	d.mu.Lock()
	delete(cr.creating, c.localID)
	d.work.end()
	d.mu.Unlock()
}

// created records the batch b of create c created and tracks it, unless
// the store says another replica owns it now (llmfleet.ErrStale: it
// adopted the batch while this one's create was under way): its requests
// then wait elsewhere, and one replica alone delivers its results. With a
// SharedStore a failed record is tried once more (a session the server
// ended while this process was paused fails the first), and a record made
// or refused while a renewal found the lease ended is made again, under
// the new run (the relinquish missed this batch, not tracked yet: another
// replica may adopt it from the ended run, or this one's new run did,
// leaving it to this create). A record is judged once no renewal is under
// way (leaseHolder.settled): one made under the token of a run the
// renewal had just started is otherwise tracked before that renewal's
// relinquish, which would drop it while the store names this live
// process its owner, and no replica would track it. A batch whose id is
// not stored is still tracked, for a restart to reconcile.
func (cr *creator) created(c *createCall, b *llmfleet.Batch) {
	d := cr.d
	var err error
	for try := 0; ; try++ {
		lost := d.lease.losses()
		err = d.journal.created(d.ctx, c.localID, b)
		if err != nil && d.shared != nil && !errors.Is(err, llmfleet.ErrStale) {
			err = d.journal.created(d.ctx, c.localID, b)
		}
		d.lease.settled(d.ctx)
		d.mu.Lock()
		// A record refused or made while a renewal found the lease ended
		// is made again under the new run, which may have adopted the
		// batch as an intent meanwhile (and left it to this create).
		if d.lease.losses() == lost || try == 2 {
			break // with the lock held
		}
		d.mu.Unlock()
	}
	defer d.mu.Unlock()
	defer d.work.end()
	if errors.Is(err, llmfleet.ErrStale) {
		delete(cr.creating, c.localID)
		d.log.Warn("batch created, but another replica adopted it meanwhile or this one's lease has ended; left to the replica that owns it",
			"batch", c.localID, "batch_id", b.ID, "requests", len(c.ws))
		for _, w := range c.ws {
			if w.state != stateDone && w.state != stateElsewhere {
				w.advance(stateElsewhere, d.log)
			}
		}
		return
	}
	if err != nil {
		d.log.Error("batch id not stored; a restart will reconcile it", "batch", c.localID, "batch_id", b.ID, "err", err)
	}
	cr.submittedLocked(c, b)
}

// submittedLocked counts a created batch and starts tracking it.
func (cr *creator) submittedLocked(c *createCall, b *llmfleet.Batch) {
	d := cr.d
	delete(cr.creating, c.localID)
	d.stats.batchesSubmitted.Add(1)
	d.log.Info("batch created", "provider", c.prov.Name(), "batch", c.localID, "batch_id", b.ID,
		"credential", credLabel(d.Sealer, c.first.Credential), "requests", len(c.ws))
	d.trackers.trackLocked(c.prov, c.first.Credential, c.localID, b, c.ws)
}
