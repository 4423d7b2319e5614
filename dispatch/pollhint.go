package dispatch

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/llmfleet/llmfleet"
)

// looked is what the status calls of one poll told.
type looked struct {
	seen   map[string]*llmfleet.Batch // by id: the batches the calls showed
	failed map[string]error           // by id: the open batches whose call failed
	// asked are the waits the retrieves asked for (Batch.PollAfter), by
	// id; a listing asks none.
	asked map[string]time.Duration
}

// look makes the status calls of one poll: a retrieve for one open
// batch, a listing for several, or for one while others wait (one call
// that may show them ended). The calls are bounded, so that one that
// never answers does not stall every batch of the credential.
func (t *tracker) look(open, waiting []string, links []trace.Link) *looked {
	lk := &looked{seen: map[string]*llmfleet.Batch{}, failed: map[string]error{}, asked: map[string]time.Duration{}}
	if len(open) == 0 {
		return lk
	}
	ctx, cancel := withTimeout(t.d.clock, t.d.ctx, pollTimeout)
	defer cancel()
	ctx, span := t.d.traces.poll(ctx, t.prov, open, links)
	if len(open) == 1 && len(waiting) == 0 {
		t.retrieve(ctx, open[0], lk)
	} else {
		t.list(ctx, open, waiting, lk)
	}
	polled(span, lk.seen, lk.failed)
	return lk
}

// retrieve looks at one batch by its id.
func (t *tracker) retrieve(ctx context.Context, id string, lk *looked) {
	t.d.stats.managementCalls.Add(1)
	b, err := t.prov.GetBatch(ctx, t.cred, id)
	if err != nil {
		lk.failed[id] = err
		return
	}
	lk.seen[id] = b
	lk.asked[id] = b.PollAfter
}

// runningLocked schedules the next look at f, seen running (or not seen
// by a listing): one poll interval on, or later if the provider asked
// for a longer wait.
func (t *tracker) runningLocked(f *flight, lk *looked, now time.Time) {
	f.nextCheck = t.d.pol.NextCheck(now)
	if pa, ok := lk.asked[f.id]; ok {
		f.hint = pa
	}
	f.askedLocked(&t.d.pol, now)
	t.wokenLocked(f, now)
}

// askedLocked holds f's next look back until the wait its provider asked
// for is over: its next check is max(its schedule, now+hint). The wait
// is honoured up to Policy.MaxPollInterval, the longest the operator
// lets a batch in flight go unlooked at (a Retry-After date read against
// a skewed clock could ask for hours).
func (f *flight) askedLocked(pol *Policy, now time.Time) {
	if f.hint <= 0 {
		f.notBefore = time.Time{}
		return
	}
	f.notBefore = now.Add(min(f.hint, pol.MaxPollInterval))
	if f.nextCheck.Before(f.notBefore) {
		f.nextCheck = f.notBefore
	}
}

// wokenLocked makes f's next look come at once if PollNow asked for it
// while the poll that just looked at f was under way.
func (t *tracker) wokenLocked(f *flight, now time.Time) {
	if f.wake {
		f.nextCheck, f.notBefore = now, time.Time{}
	}
}

// pollNowLocked wakes the flight of the batch id of the provider named
// provider, if a tracker holds it: see Dispatcher.PollNow.
func (ts *trackerSet) pollNowLocked(provider, id string) bool {
	for _, t := range ts.m {
		f := t.flights[id]
		if f == nil || t.prov.Name() != provider {
			continue
		}
		f.wake = true
		f.notBefore = time.Time{}
		if now := ts.d.clock.Now(); f.nextCheck.After(now) {
			f.nextCheck = now
		}
		t.rescheduleLocked()
		return true
	}
	return false
}

// PollNow asks the tracker of the batch that the provider named provider
// knows as batchID to look at it on its next turn (at once if it is
// idle), whatever its schedule or the wait the provider asked for: a
// webhook told that the batch ended. It reports whether this dispatcher
// tracks the batch; polling stays the guarantee either way.
func (d *Dispatcher) PollNow(provider, batchID string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.trackers == nil || d.ctx == nil || d.ctx.Err() != nil {
		return false
	}
	return d.trackers.pollNowLocked(provider, batchID)
}
