package dispatch

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/llmfleet/llmfleet"
)

// pool collects the requests that may share one batch: same provider,
// credential and pass-through headers.
type pool struct {
	key      string
	provider llmfleet.Provider
	req      *llmfleet.Request // the first request: credential and headers
	items    []*waiter
	bytes    int64
	timer    llmfleet.Timer
	flushAt  time.Time
}

func (p *pool) remove(w *waiter) {
	if i := slices.Index(p.items, w); i >= 0 {
		p.items = slices.Delete(p.items, i, i+1)
		p.bytes -= w.size()
	}
}

func (p *pool) stopTimer() {
	if p.timer != nil {
		p.timer.Stop()
		p.timer = nil
	}
}

// limits returns the most requests and bytes one batch of this pool holds.
func (d *Dispatcher) limits(p llmfleet.Provider) (int, int64) {
	l := p.Limits()
	n := d.pol.BatchMaxSize
	if l.MaxRequests > 0 {
		n = min(n, l.MaxRequests)
	}
	b := l.MaxBytes
	if b <= 0 {
		b = 1 << 62
	}
	return n, b - 4096 // room for the envelope
}

// checkSize refuses a request that no batch of p can hold. It is checked
// before a request is stored, so that a restart never finds one.
func (d *Dispatcher) checkSize(p llmfleet.Provider, w *waiter) error {
	if _, maxBytes := d.limits(p); w.size() > maxBytes {
		return &llmfleet.Error{StatusCode: 413, Type: "request_too_large",
			Message: "request is larger than the provider's batch size limit"}
	}
	return nil
}

// enqueue adds w to its pool and flushes or reschedules the pool.
func (d *Dispatcher) enqueue(p llmfleet.Provider, w *waiter) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.opened {
		return fmt.Errorf("dispatch: Submit before Open")
	}
	if d.closed {
		return llmfleet.ErrClosed
	}
	if err := d.checkSize(p, w); err != nil {
		return err
	}
	maxN, maxBytes := d.limits(p)
	key := p.Name() + "\x00" + d.fingerprint(w.req.Credential) + "\x00" + headerSignature(w.req.Header)
	pl := d.pools[key]
	if pl == nil {
		pl = &pool{key: key, provider: p, req: w.req}
		d.pools[key] = pl
	}
	// A request that would push the pool over the byte cap sends the pool
	// out first.
	if pl.bytes+w.size() > maxBytes && len(pl.items) > 0 {
		d.flushLocked(pl, false)
		pl = &pool{key: key, provider: p, req: w.req}
		d.pools[key] = pl
	}
	w.pool = pl
	w.state = stateQueued
	pl.items = append(pl.items, w)
	pl.bytes += w.size()
	d.stats.queueDepth.Add(1)
	if len(pl.items) >= d.pol.BatchMinSize || len(pl.items) >= maxN {
		d.flushLocked(pl, false)
		return nil
	}
	if !d.recovering {
		d.scheduleLocked(pl)
	}
	return nil
}

// scheduleLocked sets the pool's timer to its next flush: when its oldest
// request has waited the window, or earlier if a budget in it needs that.
func (d *Dispatcher) scheduleLocked(pl *pool) {
	at := pl.items[0].enqueued.Add(d.pol.BatchWindow)
	for _, w := range pl.items {
		if w.deadline.IsZero() {
			continue
		}
		latest := w.deadline.Add(-d.predictor.predict(pl.provider.Name(), w.model) - d.pol.slack())
		if latest.Before(at) {
			at = latest
		}
	}
	now := d.clock.Now()
	if !at.After(now) {
		d.flushLocked(pl, false)
		return
	}
	if pl.timer != nil && pl.flushAt.Equal(at) {
		return
	}
	pl.stopTimer()
	pl.flushAt = at
	pl.timer = d.clock.AfterFunc(at.Sub(now), func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.pools[pl.key] == pl && pl.flushAt.Equal(at) {
			d.flushLocked(pl, false)
		}
	})
}

// flushLocked sends the pool out as one or more batches (all of it when
// closing; otherwise the rest, beyond one full batch, stays pooled).
func (d *Dispatcher) flushLocked(pl *pool, all bool) {
	pl.stopTimer()
	maxN, maxBytes := d.limits(pl.provider)
	for len(pl.items) > 0 {
		n, size := 0, int64(0)
		for n < len(pl.items) && n < maxN && size+pl.items[n].size() <= maxBytes {
			size += pl.items[n].size()
			n++
		}
		batch := slices.Clone(pl.items[:n])
		pl.items = slices.Delete(pl.items, 0, n)
		pl.bytes -= size
		d.stats.queueDepth.Add(-int64(n))
		d.submitLocked(pl, batch)
		if !all && len(pl.items) < d.pol.BatchMinSize {
			break
		}
	}
	if len(pl.items) == 0 {
		if d.pools[pl.key] == pl {
			delete(d.pools, pl.key)
		}
		return
	}
	d.scheduleLocked(pl)
}

// submitLocked creates one batch from ws in the background.
func (d *Dispatcher) submitLocked(pl *pool, ws []*waiter) {
	items := make([]llmfleet.BatchItem, len(ws))
	batchID := llmfleet.NewID("lfb_")
	for i, w := range ws {
		// custom_ids carry the local batch id, so that no two batches,
		// even of different processes, share one: a result can never be
		// taken for another batch's request (see reconcile).
		w.customID = batchID + "-" + strconv.Itoa(i+1)
		w.state = stateSubmitting
		body, err := llmfleet.WithoutField(w.req.Body, "stream")
		if err != nil {
			body = w.req.Body
		}
		items[i] = llmfleet.BatchItem{CustomID: w.customID, Params: body}
	}
	d.beginWorkLocked()
	first := pl.req
	prov := pl.provider
	d.goOwned(func() { d.create(prov, first, batchID, ws, items) })
}

// create makes the create call and hands the batch to its tracker. A
// create that fails in a way that leaves open whether the batch exists
// (anything but an error answer from the provider) is reconciled in the
// background instead of being failed: see resolveUncertain.
func (d *Dispatcher) create(prov llmfleet.Provider, first *llmfleet.Request, batchID string, ws []*waiter, items []llmfleet.BatchItem) {
	ctx, cancel := context.WithTimeout(d.ctx, d.pol.CreateTimeout)
	defer cancel()
	intentAt := d.clock.Now()
	err := d.recordIntent(ctx, prov, first, batchID, intentAt, ws)
	var b *llmfleet.Batch
	if err == nil {
		d.stats.managementCalls.Add(1)
		b, err = prov.CreateBatch(ctx, first.Credential, first.Header, items)
		switch {
		case err == nil:
			d.recordCreated(ctx, batchID, b)
		case uncertain(err):
			d.log.Warn("batch create may or may not have happened; reconciling", "provider", prov.Name(),
				"credential", first.Credential.String(), "requests", len(ws), "err", err)
			// The resolver takes over this create's unit of work and ends
			// it. Starting it here is safe without mu: this goroutine is
			// owned, so Close's Wait has not returned.
			d.goOwned(func() { d.resolveUncertain(prov, first, batchID, intentAt, ws, err) })
			return
		default:
			d.recordCreateFailed(ctx, batchID, ws, err)
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	defer d.endWorkLocked()
	if err != nil {
		d.log.Warn("batch create failed", "provider", prov.Name(), "credential", first.Credential.String(), "requests", len(ws), "err", err)
		cause := fmt.Errorf("llmfleet: batch create failed: %w", err)
		for _, w := range ws {
			d.finishLocked(w, nil, cause)
		}
		return
	}
	d.submittedLocked(prov, first.Credential, batchID, b, ws)
}

// submittedLocked counts a created batch and starts tracking it.
func (d *Dispatcher) submittedLocked(prov llmfleet.Provider, cred llmfleet.Credential, batchID string, b *llmfleet.Batch, ws []*waiter) {
	d.stats.batchesSubmitted.Add(1)
	d.log.Info("batch created", "provider", prov.Name(), "batch_id", b.ID, "credential", cred.String(), "requests", len(ws))
	d.trackLocked(prov, cred, batchID, b, ws)
}
