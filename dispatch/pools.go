package dispatch

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	"github.com/llmfleet/llmfleet"
)

// limits returns the most requests and bytes one batch of p holds.
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

// checkSize refuses a request that no batch of its provider can hold. It
// is checked before a request is stored, so that a restart never finds
// one.
func (d *Dispatcher) checkSize(w *waiter) error {
	if _, maxBytes := d.limits(w.prov); w.size() > maxBytes {
		return &llmfleet.Error{StatusCode: 413, Type: "request_too_large",
			Message: "request is larger than the provider's batch size limit"}
	}
	return nil
}

// poolKey names the pool a waiter goes in.
func (d *Dispatcher) poolKey(w *waiter) string {
	return poolKeyOf(w.prov.Name(), d.fingerprint(w.req.Credential), w.info.Model, w.poolKey())
}

// poolKey is the provider's pool key of w's request and, unless routing
// is cache-blind, the hash of its prompt's first cache breakpoint (a
// harness's system prompt, say): requests that share a prompt prefix
// share batches, whose items read what the first of them wrote.
func (w *waiter) poolKey() string {
	if len(w.info.Prompt.Breakpoints) == 0 || w.cacheBlind {
		return w.info.PoolKey
	}
	return w.info.PoolKey + "\x00prefix:" + w.info.Prompt.Breakpoints[0].Hash
}

// poolKeyOf names the pool of a provider, credential fingerprint, model
// and the provider's pool key.
func poolKeyOf(provider, fingerprint, model, poolKey string) string {
	return provider + "\x00" + fingerprint + "\x00" + model + "\x00" + poolKey
}

// poolID is the name of a pool in a Store (StoredRequest.Pool): a hash
// of its key, which holds NUL bytes.
func poolID(key string) string {
	h := sha256.Sum256([]byte(key))
	return hex.EncodeToString(h[:16])
}

// enqueueLocked adds w to its pool and flushes or reschedules the pool.
func (d *Dispatcher) enqueueLocked(w *waiter) error {
	if !d.opened {
		return fmt.Errorf("dispatch: Submit before Open")
	}
	if d.closed {
		return llmfleet.ErrClosed
	}
	maxN, maxBytes := d.limits(w.prov)
	key := d.poolKey(w)
	pl := d.pools[key]
	if pl == nil {
		pl = &pool{key: key, prov: w.prov, first: w.req}
		d.pools[key] = pl
	}
	// A request that would push the pool over the byte cap sends the pool
	// out first.
	if pl.bytes+w.size() > maxBytes && len(pl.items) > 0 {
		d.flushLocked(pl, true)
		pl = &pool{key: key, prov: w.prov, first: w.req}
		d.pools[key] = pl
	}
	if w.state != stateQueued {
		w.must(stateQueued, d.log)
	}
	w.customID = ""
	pl.add(w)
	d.stats.queueDepth.Add(1)
	if len(pl.items) >= d.pol.BatchMinSize || len(pl.items) >= maxN {
		d.flushLocked(pl, false)
		return nil
	}
	if !d.recovering && !d.holding {
		d.scheduleAddedLocked(pl, w)
	}
	return nil
}

// scheduleAddedLocked reschedules a pool that w just joined: the flush
// time of the pool with w is the earlier of its time without w and w's
// own (Policy.FlushAt is a minimum over the items), so a pool of
// thousands is not read whole for each request that joins it.
func (d *Dispatcher) scheduleAddedLocked(pl *pool, w *waiter) {
	if pl.timer == nil || len(pl.items) == 1 {
		d.scheduleLocked(pl)
		return
	}
	own := d.pol.FlushAt([]Item{d.flushItem(w)})
	if !own.Before(pl.flushAt) {
		return
	}
	d.setFlushLocked(pl, own)
}

// enqueueAllLocked pools ws together: their pools are scheduled once all
// are in, so that requests whose window passed (sent back after an
// uncertain create, or recovered) still share a batch. It returns the
// waiters it could not pool, with the reason.
func (d *Dispatcher) enqueueAllLocked(ws []*waiter) map[*waiter]error {
	failed := map[*waiter]error{}
	d.holding = true
	for _, w := range ws {
		if err := d.enqueueLocked(w); err != nil {
			failed[w] = err
		}
	}
	d.holding = false
	if !d.recovering {
		for _, pl := range d.pools {
			if pl.timer == nil {
				d.scheduleLocked(pl)
			}
		}
	}
	return failed
}

// scheduleLocked sets the pool's timer to its next flush (Policy.FlushAt),
// or flushes it now if that time has come.
func (d *Dispatcher) scheduleLocked(pl *pool) {
	at := d.pol.FlushAt(pl.policyItems(d.flushItem))
	if pl.timer != nil && pl.flushAt.Equal(at) && at.After(d.clock.Now()) {
		return
	}
	d.setFlushLocked(pl, at)
}

// flushItem is what Policy.FlushAt reads of a pooled request: its times,
// its model's predicted turnaround and its rescue's reserve.
func (d *Dispatcher) flushItem(w *waiter) Item {
	name := w.prov.Name()
	return Item{Accepted: w.accepted, Deadline: w.deadline,
		Predicted: d.predictor.at(name, w.info.Model, d.pol.FlushQuantile),
		Reserve:   d.pol.Reserve(d.syncLat.predict(name, w.info.Model))}
}

// setFlushLocked sets the pool's timer to at, or flushes it now if at has
// come.
func (d *Dispatcher) setFlushLocked(pl *pool, at time.Time) {
	now := d.clock.Now()
	if !at.After(now) {
		d.flushLocked(pl, false)
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

// flushLocked sends the pool out as one or more batches: all of it when
// all is set; otherwise full batches, and the rest stays pooled if it is
// under the minimum size.
func (d *Dispatcher) flushLocked(pl *pool, all bool) {
	pl.stopTimer()
	maxN, maxBytes := d.limits(pl.prov)
	for first := true; len(pl.items) > 0; first = false {
		if !first && !all && len(pl.items) < d.pol.BatchMinSize {
			break
		}
		ws := pl.take(maxN, maxBytes)
		d.stats.queueDepth.Add(-int64(len(ws)))
		d.submitLocked(pl, ws)
	}
	if len(pl.items) == 0 {
		if d.pools[pl.key] == pl {
			delete(d.pools, pl.key)
		}
		return
	}
	d.scheduleLocked(pl)
}

// withdrawLocked takes a queued waiter out of its pool.
func (d *Dispatcher) withdrawLocked(w *waiter) {
	pl := w.pool
	if pl == nil || !pl.remove(w) {
		return
	}
	d.stats.queueDepth.Add(-1)
	if len(pl.items) == 0 {
		pl.stopTimer()
		if d.pools[pl.key] == pl {
			delete(d.pools, pl.key)
		}
		return
	}
	d.scheduleLocked(pl)
}

// submitLocked gives ws a batch of their own, tagged with a new local id
// that every custom_id carries, and creates it in the background.
func (d *Dispatcher) submitLocked(pl *pool, ws []*waiter) {
	if d.shared != nil {
		// The pool is the fleet's: claim in the store what every
		// replica accepted into it by now.
		for _, w := range ws {
			w.must(stateSubmitting, d.log)
		}
		d.work.begin()
		cutoff := d.clock.Now()
		d.work.run(func() { d.claim(pl.key, pl.prov, pl.first, cutoff, ws) })
		return
	}
	c := &createCall{localID: llmfleet.NewID("lfb_"), prov: pl.prov, first: pl.first, ws: ws}
	d.creating[c.localID] = true
	c.items = make([]llmfleet.BatchItem, len(ws))
	for i, w := range ws {
		w.customID = c.localID + "-" + strconv.Itoa(i+1)
		w.must(stateSubmitting, d.log)
		c.items[i] = llmfleet.BatchItem{CustomID: w.customID, Params: w.params, Endpoint: w.req.Endpoint}
	}
	d.work.begin()
	d.work.run(func() { d.create(c) })
}
