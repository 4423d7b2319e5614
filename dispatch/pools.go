package dispatch

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	"github.com/llmfleet/llmfleet"
)

// poolSet holds the pools, by key, under the dispatcher's lock: it owns
// the map, and whether scheduling waits (while several requests are
// pooled together, or stored ones picked up). Each pool owns its items,
// bytes and flush timer.
type poolSet struct {
	d *Dispatcher
	m map[string]*pool
	// recovering is set while Open picks up stored requests: their pools
	// are scheduled once all are back, so that requests whose window
	// passed while the process was down share batches again.
	recovering bool
	// holding is set while enqueueAllLocked pools several requests.
	holding bool
}

// limits returns the most requests and bytes one batch of p holds.
func (ps *poolSet) limits(p llmfleet.Provider) (int, int64) {
	d := ps.d
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
func (ps *poolSet) checkSize(w *waiter) error {
	if _, maxBytes := ps.limits(w.prov); w.size() > maxBytes {
		return &llmfleet.Error{StatusCode: 413, Type: "request_too_large",
			Message: "request is larger than the provider's batch size limit"}
	}
	return nil
}

// poolKey names the pool a waiter goes in.
func (ps *poolSet) poolKey(w *waiter) string {
	d := ps.d
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
func (ps *poolSet) enqueueLocked(w *waiter) error {
	d := ps.d
	if !d.opened {
		return fmt.Errorf("dispatch: Submit before Open")
	}
	if d.closed {
		return llmfleet.ErrClosed
	}
	maxN, maxBytes := ps.limits(w.prov)
	key := ps.poolKey(w)
	pl := ps.m[key]
	if pl == nil {
		pl = &pool{key: key, prov: w.prov, first: w.req}
		ps.m[key] = pl
	}
	// A request that would push the pool over the byte cap sends the pool
	// out first.
	if pl.bytes+w.size() > maxBytes && len(pl.items) > 0 {
		ps.flushLocked(pl, true)
		pl = &pool{key: key, prov: w.prov, first: w.req}
		ps.m[key] = pl
	}
	if w.state != stateQueued {
		w.must(stateQueued, d.log)
	}
	w.customID = ""
	pl.add(w)
	d.stats.queueDepth.Add(1)
	if len(pl.items) >= d.pol.BatchMinSize || len(pl.items) >= maxN {
		ps.flushLocked(pl, false)
		return nil
	}
	if !ps.recovering && !ps.holding {
		ps.scheduleAddedLocked(pl, w)
	}
	return nil
}

// scheduleAddedLocked reschedules a pool that w just joined: the flush
// time of the pool with w is the earlier of its time without w and w's
// own (Policy.FlushAt is a minimum over the items), so a pool of
// thousands is not read whole for each request that joins it.
func (ps *poolSet) scheduleAddedLocked(pl *pool, w *waiter) {
	d := ps.d
	if pl.timer == nil || len(pl.items) == 1 {
		ps.scheduleLocked(pl)
		return
	}
	own := d.pol.FlushAt([]Item{ps.flushItem(w)})
	if !own.Before(pl.flushAt) {
		return
	}
	ps.setFlushLocked(pl, own)
}

// enqueueAllLocked pools ws together: their pools are scheduled once all
// are in, so that requests whose window passed (sent back after an
// uncertain create, or recovered) still share a batch. It returns the
// waiters it could not pool, with the reason.
func (ps *poolSet) enqueueAllLocked(ws []*waiter) map[*waiter]error {
	failed := map[*waiter]error{}
	ps.holding = true
	for _, w := range ws {
		if err := ps.enqueueLocked(w); err != nil {
			failed[w] = err
		}
	}
	ps.holding = false
	if !ps.recovering {
		for _, pl := range ps.m {
			if pl.timer == nil {
				ps.scheduleLocked(pl)
			}
		}
	}
	return failed
}

// scheduleLocked sets the pool's timer to its next flush (Policy.FlushAt),
// or flushes it now if that time has come.
func (ps *poolSet) scheduleLocked(pl *pool) {
	d := ps.d
	at := d.pol.FlushAt(pl.policyItems(ps.flushItem))
	if pl.timer != nil && pl.flushAt.Equal(at) && at.After(d.clock.Now()) {
		return
	}
	ps.setFlushLocked(pl, at)
}

// flushItem is what Policy.FlushAt reads of a pooled request: its times,
// its model's predicted turnaround and its rescue's reserve.
func (ps *poolSet) flushItem(w *waiter) Item {
	d := ps.d
	name := w.prov.Name()
	return Item{Accepted: w.accepted, Deadline: w.deadline,
		Predicted: d.predictor.at(name, w.info.Model, d.pol.FlushQuantile),
		Reserve:   d.pol.Reserve(d.syncLat.predict(name, w.info.Model))}
}

// setFlushLocked sets the pool's timer to at, or flushes it now if at has
// come.
func (ps *poolSet) setFlushLocked(pl *pool, at time.Time) {
	d := ps.d
	now := d.clock.Now()
	if !at.After(now) {
		ps.flushLocked(pl, false)
		return
	}
	pl.stopTimer()
	pl.flushAt = at
	pl.timer = d.clock.AfterFunc(at.Sub(now), func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		if ps.m[pl.key] == pl && pl.flushAt.Equal(at) {
			ps.flushLocked(pl, false)
		}
	})
}

// flushLocked sends the pool out as one or more batches: all of it when
// all is set; otherwise full batches, and the rest stays pooled if it is
// under the minimum size.
func (ps *poolSet) flushLocked(pl *pool, all bool) {
	d := ps.d
	pl.stopTimer()
	maxN, maxBytes := ps.limits(pl.prov)
	for first := true; len(pl.items) > 0; first = false {
		if !first && !all && len(pl.items) < d.pol.BatchMinSize {
			break
		}
		ws := pl.take(maxN, maxBytes)
		d.stats.queueDepth.Add(-int64(len(ws)))
		ps.submitLocked(pl, ws)
	}
	if len(pl.items) == 0 {
		if ps.m[pl.key] == pl {
			delete(ps.m, pl.key)
		}
		return
	}
	ps.scheduleLocked(pl)
}

// withdrawLocked takes a queued waiter out of its pool.
func (ps *poolSet) withdrawLocked(w *waiter) {
	d := ps.d
	pl := w.pool
	if pl == nil || !pl.remove(w) {
		return
	}
	d.stats.queueDepth.Add(-1)
	if len(pl.items) == 0 {
		pl.stopTimer()
		if ps.m[pl.key] == pl {
			delete(ps.m, pl.key)
		}
		return
	}
	ps.scheduleLocked(pl)
}

// relinquishLocked gives up every pool once the lease was found ended:
// its requests may be another replica's now, and wait elsewhere.
func (ps *poolSet) relinquishLocked() {
	for key, pl := range ps.m {
		pl.stopTimer()
		for _, w := range pl.items {
			w.must(stateElsewhere, ps.d.log)
			w.pool = nil
			ps.d.stats.queueDepth.Add(-1)
		}
		delete(ps.m, key)
	}
}

// submitLocked gives ws a batch of their own, tagged with a new local id
// that every custom_id carries, and creates it in the background.
func (ps *poolSet) submitLocked(pl *pool, ws []*waiter) {
	d := ps.d
	if d.shared != nil {
		// The pool is the fleet's: claim in the store what every
		// replica accepted into it by now.
		for _, w := range ws {
			w.must(stateSubmitting, d.log)
		}
		d.work.begin()
		cutoff := d.clock.Now()
		d.work.run(func() { d.fleet.claim(pl.key, pl.prov, pl.first, cutoff, ws) })
		return
	}
	c := &createCall{localID: llmfleet.NewID("lfb_"), prov: pl.prov, first: pl.first, ws: ws}
	d.creates.creating[c.localID] = true
	c.items = make([]llmfleet.BatchItem, len(ws))
	for i, w := range ws {
		w.customID = c.localID + "-" + strconv.Itoa(i+1)
		w.must(stateSubmitting, d.log)
		c.items[i] = llmfleet.BatchItem{CustomID: w.customID, Params: w.params, Endpoint: w.req.Endpoint}
	}
	d.work.begin()
	d.work.run(func() { d.creates.create(c) })
}
