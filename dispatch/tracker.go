package dispatch

import (
	"slices"
	"strings"
	"time"

	"github.com/llmfleet/llmfleet"
)

// trackerSet holds the trackers, one per provider and credential, under
// the dispatcher's lock, and the provider ids of the batches the store
// knows.
type trackerSet struct {
	d        *Dispatcher
	m        map[string]*tracker
	knownIDs map[string]bool
}

// tracker follows the in-flight batches of one provider and credential,
// so that one upstream call answers for all of them. It owns its flights
// and their poll schedule: one timer, set to the earliest due flight.
type tracker struct {
	d       *Dispatcher
	key     string
	prov    llmfleet.Provider
	cred    llmfleet.Credential
	flights map[string]*flight // by the provider's batch id
	timer   llmfleet.Timer
	timerAt time.Time
	busy    bool // a poll or a results fetch is under way
}

// flight is one batch in flight upstream.
type flight struct {
	id        string    // the provider's batch id
	localID   string    // llmfleet's batch id, its tag
	submitted time.Time // local clock, when it was known created
	expires   time.Time // the provider's expires_at (zero: unknown)
	predicted time.Duration
	size      int // requests it was created with
	models    []string
	waiters   map[string]*waiter // by custom_id
	nextCheck time.Time
	ended     *llmfleet.Batch // set once the provider reports it ended

	// hint is the wait the provider last asked for before the batch is
	// looked at again (Batch.PollAfter of a retrieve; a listing asks
	// nothing and keeps it), and notBefore the time it asked for: no
	// call is made for the batch sooner (see pollhint.go). wake is set
	// by PollNow: the batch's next poll comes at once, hint or not.
	hint      time.Duration
	notBefore time.Time
	wake      bool

	// pollFailures counts status calls in a row that failed for this
	// batch; pollErr is the last failure.
	pollFailures int
	pollErr      error
	// fetchFailures counts failed result downloads in a row.
	fetchFailures int
	// held are the answers read from its results that could not be
	// stored yet (see holdFlightLocked).
	held []answer
	// rerouting is set while the requests of a batch that failed as a
	// whole are sent sync (see reroute): no poll fetches it meanwhile.
	rerouting bool
}

// due returns the earliest next check of the flights (zero: none), but
// for those being rerouted.
func (t *tracker) due() time.Time {
	var at time.Time
	for _, f := range t.flights {
		if f.rerouting {
			continue
		}
		if at.IsZero() || f.nextCheck.Before(at) {
			at = f.nextCheck
		}
	}
	return at
}

// split returns the ids of the flights not known to have ended that may
// be looked at now, those the provider asked not to look at yet
// (waiting: a listing made for the others may still show them ended),
// and the flights that ended (whose results are to be fetched), all in
// the order of their ids, so that a poll does the same in the same state
// (the simulator's runs are reproducible). It takes the flights' PollNow
// wakes.
func (t *tracker) split(now time.Time) (open, waiting []string, ended []*flight) {
	for id, f := range t.flights {
		if f.rerouting {
			continue
		}
		f.wake = false
		switch {
		case f.ended != nil:
			ended = append(ended, f)
		case f.notBefore.After(now):
			waiting = append(waiting, id)
		default:
			open = append(open, id)
		}
	}
	slices.Sort(open)
	slices.Sort(waiting)
	slices.SortFunc(ended, func(a, b *flight) int { return strings.Compare(a.id, b.id) })
	return open, waiting, ended
}

func (t *tracker) stop() {
	if t.timer != nil {
		t.timer.Stop()
		t.timer = nil
	}
}

// relinquishLocked gives up every flight once the lease was found ended:
// its batches may be another replica's now, and their requests wait
// elsewhere. It returns, by batch, the answers its flights held
// undelivered (the lease not known held, or the store unwritable), for
// the caller to deliver those it paid for (answerer.deliverRerouted) once
// the engine's lock is released.
func (ts *trackerSet) relinquishLocked() (held map[string][]answer) {
	for key, t := range ts.m {
		t.stop()
		for id, f := range t.flights {
			for _, w := range f.waiters {
				w.advance(stateElsewhere, ts.d.log)
			}
			if len(f.held) > 0 {
				if held == nil {
					held = map[string][]answer{}
				}
				held[id] = f.held
			}
			delete(t.flights, id)
			ts.d.work.end()
		}
		if !t.busy {
			delete(ts.m, key)
		}
	}
	return held
}

// ages returns the ages of the batches of a model still in flight.
func (ts *trackerSet) ages(provider, model string) []time.Duration {
	d := ts.d
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.clock.Now()
	var ages []time.Duration
	for _, t := range ts.m {
		if t.prov.Name() != provider {
			continue
		}
		for _, f := range t.flights {
			if f.ended == nil && slices.Contains(f.models, model) {
				ages = append(ages, now.Sub(f.submitted))
			}
		}
	}
	return ages
}

// countLocked returns how many batches are in flight (0 before Open).
func (ts *trackerSet) countLocked() int {
	if ts == nil {
		return 0
	}
	n := 0
	for _, t := range ts.m {
		n += len(t.flights)
	}
	return n
}

// infoLocked describes the batches in flight, in no order (none before
// Open).
func (ts *trackerSet) infoLocked() []FlightInfo {
	if ts == nil {
		return nil
	}
	var out []FlightInfo
	for _, t := range ts.m {
		for _, f := range t.flights {
			out = append(out, FlightInfo{ID: f.id, Provider: t.prov.Name(), Models: slices.Clone(f.models),
				Requests: len(f.waiters), Submitted: f.submitted, PredictedEnd: f.submitted.Add(f.predicted), Ended: f.ended != nil})
		}
	}
	return out
}
