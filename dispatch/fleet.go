package dispatch

import (
	"time"

	"github.com/llmfleet/llmfleet"
)

// fleet is the engine's part in a fleet of replicas: it claims the
// fleet's pools, renews the lease and adopts what ended replicas owned
// (its loop), and follows the requests waiting elsewhere.
type fleet struct {
	d *Dispatcher
}

// This file is the engine's part in a fleet of replicas sharing a
// llmfleet.SharedStore. Each replica pools what it accepted, as alone;
// when a pool of its is due, it claims the fleet's pool in the store
// (every replica's queued requests of that pool, oldest first), so that
// one batch carries them all. A request of its that another replica
// claimed waits elsewhere, answered when the store announces its result
// (Watch) or when a periodic look finds it (sweep). A lease, renewed
// every third of Dispatcher.Lease, keeps what it owns its own; the
// batches and queued requests of a replica whose lease ended are
// adopted (pickUp), intents reconciled by their tag as after a restart.

// claim claims the fleet's pool key for batches, as many as are full and
// one more, of the requests accepted by cutoff (when the pool was due: a
// later one waits for the pool's next flush), and creates them. ws are
// the requests of this process that the pool's flush took; those another
// replica claimed wait elsewhere.
func (fl *fleet) claim(key string, prov llmfleet.Provider, first *llmfleet.Request, cutoff time.Time, ws []*waiter) {
	d := fl.d
	mine := make(map[string]*waiter, len(ws))
	for _, w := range ws {
		mine[w.id] = w
	}
	maxN, maxBytes := d.pools.limits(prov)
	fp := d.fingerprint(first.Credential)
	for {
		c := &createCall{localID: llmfleet.NewID("lfb_"), prov: prov, first: first}
		c.intentAt = d.clock.Now()
		c.deadline = c.intentAt.Add(d.pol.CreateTimeout)
		sb := &llmfleet.StoredBatch{ID: c.localID, Provider: prov.Name(), CredentialID: fp,
			State: llmfleet.BatchIntent, IntentAt: c.intentAt, CreateDeadline: c.deadline}
		// Its create is under way from the claim on: an adoption of the
		// intent meanwhile (this replica's lease ended during the claim)
		// leaves it to this create rather than reconcile it too.
		d.mu.Lock()
		d.creates.creating[c.localID] = true
		d.mu.Unlock()
		rows, err := d.shared.Claim(d.ctx, sb, poolID(key), cutoff, maxN, maxBytes)
		if err != nil || len(rows) == 0 {
			d.mu.Lock()
			delete(d.creates.creating, c.localID)
			d.mu.Unlock()
		}
		if err != nil {
			if d.ctx.Err() == nil {
				d.log.Warn("claiming a pool failed; its requests wait for the next look", "provider", prov.Name(), "err", err)
			}
			break
		}
		if len(rows) == 0 {
			break
		}
		d.mu.Lock()
		for _, r := range rows {
			w := mine[r.ID]
			if w != nil {
				delete(mine, r.ID)
			} else if w = fl.takeOverLocked(r, first.Credential); w == nil {
				continue
			}
			if w.state != stateSubmitting {
				// (A rescue may have answered it meanwhile: it stays
				// done, and the batch's answer is recorded as late.)
				w.advance(stateSubmitting, d.log)
			}
			w.customID = r.CustomID
			c.ws = append(c.ws, w)
			c.items = append(c.items, llmfleet.BatchItem{CustomID: w.customID, Params: w.params, Endpoint: w.req.Endpoint})
		}
		d.work.begin()
		d.work.run(func() { d.creates.send(c) })
		d.mu.Unlock()
		if len(rows) < maxN {
			break
		}
	}
	d.mu.Lock()
	for _, w := range mine {
		w.advance(stateElsewhere, d.log)
	}
	d.work.end()
	d.mu.Unlock()
}

// takeOverLocked returns the waiter of a request this process claimed
// from the fleet's pool: its own (queued here, or waiting elsewhere), or
// a new one with no caller, for a request another replica accepted (its
// caller waits there). nil if the request cannot be read (logged; it
// stays in the batch's intent, unanswered, for a later adoption).
func (fl *fleet) takeOverLocked(r *llmfleet.StoredRequest, cred llmfleet.Credential) *waiter {
	d := fl.d
	if w := d.recovery.reuseLocked(r.ID); w != nil {
		return w
	}
	w, err := d.recovery.reviveLocked(r, cred)
	if err != nil {
		d.log.Error("claimed request cannot be read", "request_id", r.ID, "err", err)
		return nil
	}
	return w
}

// reuseLocked returns the waiter of this process for a request it is
// to take charge of (claimed, or adopted with a batch or a queue) that
// it does not have in hand: one queued here (taken out of its pool) or
// waiting elsewhere, its caller still waiting; nil if it has none.
func (rv *adopter) reuseLocked(id string) *waiter {
	d := rv.d
	w := d.ids.live[id]
	switch {
	case w == nil:
		return nil
	case w.state == stateQueued:
		d.pools.withdrawLocked(w)
		return w
	case w.state == stateElsewhere:
		return w
	}
	return nil
}

// reviveLocked makes a waiter with no caller for a stored request (after a
// restart, or accepted by another replica) and makes it the request of
// its id here.
func (rv *adopter) reviveLocked(r *llmfleet.StoredRequest, cred llmfleet.Credential) (*waiter, error) {
	d := rv.d
	req := &llmfleet.Request{Provider: r.Provider, Credential: cred, Header: r.Header, Endpoint: r.Endpoint, Body: r.Body, ID: r.ID, Client: r.Client}
	w, err := d.accepts.newWaiter(req, r.Budget, r.AcceptedAt)
	if err != nil {
		return nil, err
	}
	w.deadline, w.accepted, w.detached = r.Deadline, r.AcceptedAt, true
	d.ids.reserveLocked(w)
	return w, nil
}

// loop renews the lease, adopts what replicas whose lease ended
// owned, looks at the requests waiting elsewhere and learns the fleet's
// turnarounds, every third of the lease (or at once when a rescue waits
// for the lease, see deferRescue), until the dispatcher closes.
func (fl *fleet) loop() {
	d := fl.d
	every := d.Lease / 3
	for d.lease.wait(d.ctx, every) {
		sent := d.clock.Now()
		d.lease.beginRenewal()
		held, err := d.shared.Heartbeat(d.ctx, d.Lease)
		if err != nil {
			d.lease.endRenewal()
			if d.ctx.Err() == nil {
				d.log.Warn("lease not renewed", "err", err)
			}
			fl.runDeferred() // budgets first: the rescue checks the store itself
			continue
		}
		if !held {
			d.log.Warn("lease had ended: another replica may have adopted what this one owned; going on as a new owner")
		}
		var given map[string][]answer // what the flights given up held undelivered
		d.mu.Lock()
		d.lease.renewed(sent.Add(d.Lease))
		if !held {
			// What it held in memory may be another replica's now: its
			// waiters wait elsewhere (a caller here is answered when
			// the answer is stored, or rescued at its time); what no
			// replica adopted meanwhile comes back by Adopt.
			given = d.trackers.relinquishLocked()
			d.pools.relinquishLocked()
			d.lease.ended()
		}
		closing := d.closed
		d.mu.Unlock()
		d.lease.endRenewal()
		for id, answers := range given {
			d.answers.deliverRerouted(id, answers)
		}
		if !closing { // what it would adopt is the others' to take
			fl.adopt()
		}
		fl.runDeferred()
		if closing {
			continue
		}
		fl.sweep()
		fl.relearn()
	}
}

// runDeferred makes the rescues that waited for the lease.
func (fl *fleet) runDeferred() {
	d := fl.d
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, w := range d.lease.takeDeferred() {
		// Renewed, or not (the store unreachable): budgets first; each
		// rescue still looks in the store before it pays.
		d.rescues.tryLocked(w, false)
	}
}

// adopt takes charge of what replicas whose lease ended owned (this
// one's ended runs included).
func (fl *fleet) adopt() {
	d := fl.d
	queued, batches, err := d.shared.Adopt(d.ctx)
	switch {
	case err != nil:
		if d.ctx.Err() == nil {
			d.log.Warn("adopting failed", "err", err)
		}
	case len(queued)+len(batches) > 0:
		d.log.Info("adopting what replicas whose lease ended owned", "queued", len(queued), "batches", len(batches))
		if err := d.recovery.pickUp(d.ctx, d.Store, queued, batches); err != nil && d.ctx.Err() == nil {
			d.log.Warn("picking up adopted state failed", "err", err)
		}
	}
}

// storedElsewhere answers the requests waiting here whose results
// another replica (or this one) stored: Watch's callback.
func (fl *fleet) storedElsewhere(ids []string) {
	d := fl.d
	d.mu.Lock()
	var ws []*waiter
	for _, id := range ids {
		if w := d.ids.live[id]; w != nil && !w.delivering && (w.state == stateElsewhere || w.state == stateQueued) {
			ws = append(ws, w)
		}
	}
	d.mu.Unlock()
	fl.look(ws, false)
}

// sweep looks at every request waiting elsewhere: an announcement may
// have been lost, or the request may be queued again.
func (fl *fleet) sweep() {
	d := fl.d
	d.mu.Lock()
	var ws []*waiter
	for _, w := range d.ids.live {
		if w.state == stateElsewhere {
			ws = append(ws, w)
		}
	}
	d.mu.Unlock()
	fl.look(ws, true)
}

// look reads the stored state of waiters not in this process's hands,
// many at a time: one answered is answered from its stored result; with
// requeue, one queued in the store (its batch proven not created, or a
// claim that skipped it) is pooled here again.
func (fl *fleet) look(ws []*waiter, requeue bool) {
	d := fl.d
	const chunk = 500
	for len(ws) > 0 {
		part := ws[:min(chunk, len(ws))]
		ws = ws[len(part):]
		ids := make([]string, len(part))
		for i, w := range part {
			ids[i] = w.id
		}
		srs, err := d.shared.GetRequests(d.ctx, ids)
		if err != nil {
			if d.ctx.Err() == nil {
				d.log.Warn("reading requests answered elsewhere failed; looking again later", "requests", len(ids), "err", err)
			}
			return
		}
		stored := make(map[string]*llmfleet.StoredRequest, len(srs))
		for _, sr := range srs {
			stored[sr.ID] = sr
		}
		d.mu.Lock()
		for _, w := range part {
			sr := stored[w.id]
			switch {
			case sr == nil, w.delivering:
				// Unknown (purged?), or this process is storing its answer.
			case sr.Result != nil && (w.state == stateElsewhere || w.state == stateQueued):
				if w.state == stateQueued {
					d.pools.withdrawLocked(w)
				}
				resp, err := storedAnswer(sr)
				d.answers.finishLocked(w, resp, err, nil)
			case requeue && sr.State == llmfleet.RequestQueued && w.state == stateElsewhere:
				if err := d.pools.enqueueLocked(w); err != nil {
					d.answers.finishLocked(w, nil, err, nil)
				}
			}
		}
		d.mu.Unlock()
	}
}

// relearn loads the turnarounds every replica observed, so that the
// fleet routes alike.
func (fl *fleet) relearn() {
	d := fl.d
	if d.pol.NoLearning {
		return
	}
	samples, err := d.Store.Turnarounds(d.ctx, d.pol.TurnaroundSamples)
	if err != nil {
		return
	}
	d.predictor.load(samples)
	d.cache.relearnCache(d.ctx)
}

// waitElsewhereLocked makes a waiter, with no caller, for a stored
// request another replica has in hands, for callers to follow; false if
// the request cannot be read.
func (fl *fleet) waitElsewhereLocked(sr *llmfleet.StoredRequest, cred llmfleet.Credential) bool {
	w := fl.takeOverLocked(sr, cred)
	if w == nil {
		return false
	}
	if w.state != stateElsewhere {
		w.must(stateElsewhere, fl.d.log)
	}
	return true
}
