package dispatch

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/llmfleet/llmfleet"
)

// Bounds of the polling of batches in flight.
const (
	// pollTimeout bounds the status calls (retrieve, list) of one poll.
	pollTimeout = time.Minute
	// resultsTimeout bounds one download of a batch's results.
	resultsTimeout = 10 * time.Minute
	// maxFetchFailures is how many failed downloads in a row make the
	// dispatcher answer the batch's requests with ErrResultMissing.
	maxFetchFailures = 8
	// maxRefusedPolls is how many status calls in a row the provider may
	// refuse for a batch (404, 401, 403: an answer, not a lost
	// connection) before its requests are answered with that error.
	maxRefusedPolls = 8
	// expiryGrace is how long past its expiry a batch that cannot be
	// looked at is still polled before its requests are answered with
	// ErrResultMissing.
	expiryGrace = time.Hour
	// defaultExpiry is a batch's expiry when the provider gave none.
	defaultExpiry = 24 * time.Hour
)

// trackLocked starts tracking a created batch.
func (ts *trackerSet) trackLocked(prov llmfleet.Provider, cred llmfleet.Credential, localID string, b *llmfleet.Batch, ws []*waiter) {
	d := ts.d
	key := prov.Name() + "\x00" + d.fingerprint(cred)
	t := ts.m[key]
	if t == nil {
		t = &tracker{d: d, key: key, prov: prov, cred: cred, flights: map[string]*flight{}}
		ts.m[key] = t
	}
	now := d.clock.Now()
	f := &flight{id: b.ID, localID: localID, submitted: now, expires: b.ExpiresAt, size: len(ws), waiters: make(map[string]*waiter, len(ws))}
	if f.expires.IsZero() {
		f.expires = now.Add(defaultExpiry)
	}
	seen := map[string]bool{}
	for _, w := range ws {
		w.advance(stateInFlight, d.log)
		w.submitted = now
		f.waiters[w.customID] = w
		if !seen[w.info.Model] {
			seen[w.info.Model] = true
			f.models = append(f.models, w.info.Model)
			f.predicted = max(f.predicted, d.predictor.predict(prov.Name(), w.info.Model))
		}
	}
	if b.Status == llmfleet.BatchEnded {
		f.ended = b
		f.nextCheck = now
	} else {
		f.nextCheck = d.pol.NextCheck(now)
		f.hint = b.PollAfter
		f.askedLocked(&d.pol, now)
	}
	t.flights[f.id] = f
	d.work.begin()
	t.rescheduleLocked()
}

// rescheduleLocked sets the tracker's timer to its earliest due flight.
func (t *tracker) rescheduleLocked() {
	d := t.d
	if t.busy {
		return
	}
	if len(t.flights) == 0 {
		t.stop()
		delete(d.trackers.m, t.key)
		return
	}
	at := t.due()
	if at.IsZero() {
		t.stop() // every flight is being rerouted: the last reschedules
		return
	}
	if t.timer != nil && t.timerAt.Equal(at) {
		return
	}
	t.stop()
	t.timerAt = at
	t.timer = d.clock.AfterFunc(max(at.Sub(d.clock.Now()), 0), func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.ctx.Err() != nil || t.busy || !t.timerAt.Equal(at) {
			return
		}
		t.timer = nil
		t.busy = true
		d.work.run(func() { t.poll() })
	})
}

// poll looks at the in-flight batches of the tracker with as few calls
// as it can (one, but for batches a listing did not reach), then fetches
// the results of the batches that ended. A batch whose provider asked
// for a wait is not called for until the wait is over, but a listing
// made for the others that shows it ended is taken.
func (t *tracker) poll() {
	d := t.d
	d.mu.Lock()
	open, waiting, ended := t.split(d.clock.Now())
	links := t.linksLocked(open)
	d.mu.Unlock()

	lk := t.look(open, waiting, links)

	d.mu.Lock()
	now := d.clock.Now()
	var gone []*flight
	var learnt []llmfleet.TurnaroundSample
	for _, id := range open {
		f := t.flights[id]
		if f == nil {
			continue
		}
		if err := lk.failed[id]; err != nil {
			if t.pollFailedLocked(f, err, now) {
				gone = append(gone, f)
			}
			t.wokenLocked(f, now)
			continue
		}
		f.pollFailures, f.pollErr = 0, nil
		b := lk.seen[id]
		if b == nil || b.Status != llmfleet.BatchEnded {
			t.runningLocked(f, lk, now)
			continue
		}
		learnt = append(learnt, t.endedLocked(f, b, now)...)
		ended = append(ended, f)
	}
	for _, id := range waiting {
		if f, b := t.flights[id], lk.seen[id]; f != nil && f.ended == nil && !f.rerouting && b != nil && b.Status == llmfleet.BatchEnded {
			learnt = append(learnt, t.endedLocked(f, b, now)...)
			ended = append(ended, f)
		}
	}
	d.mu.Unlock()

	if d.ObserveTurnaround != nil { // (the application's hook: not under the lock)
		for _, s := range learnt {
			d.ObserveTurnaround(s.Provider, s.Model, s.Turnaround)
		}
	}

	for _, f := range gone {
		t.giveUpFlight(f)
	}
	for _, f := range ended {
		t.fetch(f)
	}

	d.mu.Lock()
	t.busy = false
	t.rescheduleLocked()
	d.mu.Unlock()
}

// pollFailedLocked counts a failed status call for f and reports whether
// to give up on it: after maxRefusedPolls refusals in a row (the provider
// answered 4xx: the batch is gone or the credential no longer reads it),
// or when it still cannot be looked at well past its expiry.
func (t *tracker) pollFailedLocked(f *flight, err error, now time.Time) bool {
	d := t.d
	f.pollFailures++
	f.pollErr = err
	d.log.Warn("batch poll failed", "provider", t.prov.Name(), "batch_id", f.id, "failures", f.pollFailures, "err", err)
	if (refused(err) && f.pollFailures >= maxRefusedPolls) || now.After(f.expires.Add(expiryGrace)) {
		return true
	}
	f.nextCheck = now.Add(d.pol.RetryAfter(f.pollFailures - 1))
	return false
}

// refused reports whether err is the provider's answer refusing a call
// for good (a 4xx other than a rate limit, a timeout or a conflict).
func refused(err error) bool {
	var pe *llmfleet.Error
	if !errors.As(err, &pe) {
		return false
	}
	s := pe.StatusCode
	return s >= 400 && s < 500 && s != http.StatusTooManyRequests && s != http.StatusRequestTimeout && s != http.StatusConflict
}

// endedLocked records that f ended, teaches the predictor its turnaround
// and returns the turnarounds it learnt, one per model.
func (t *tracker) endedLocked(f *flight, b *llmfleet.Batch, now time.Time) []llmfleet.TurnaroundSample {
	d := t.d
	f.ended = b
	d.stats.batchesEnded.Add(1)
	turnaround := b.EndedAt.Sub(b.CreatedAt)
	var samples []llmfleet.TurnaroundSample
	for _, m := range f.models {
		if b.Failure != nil {
			break // a batch that failed as a whole ran nothing: no turnaround
		}
		// A pool holds one model: a batch's turnaround teaches only the
		// models it held.
		if !d.pol.NoLearning {
			d.predictor.observe(t.prov.Name(), m, turnaround)
		}
		samples = append(samples, llmfleet.TurnaroundSample{Provider: t.prov.Name(), Model: m, Size: f.size,
			Turnaround: turnaround, At: b.EndedAt})
	}
	localID, endedAt := f.localID, b.EndedAt
	d.work.run(func() {
		if err := d.journal.ended(d.ctx, localID, endedAt); err != nil {
			d.log.Warn("batch end not stored", "batch_id", b.ID, "err", err)
		}
		if err := d.journal.turnarounds(d.ctx, samples); err != nil {
			d.log.Warn("batch turnaround not stored", "batch_id", b.ID, "err", err)
		}
	})
	d.log.Info("batch ended", "provider", t.prov.Name(), "batch_id", f.id,
		"turnaround", turnaround, "seen_after", now.Sub(f.submitted),
		"succeeded", b.Counts.Succeeded, "errored", b.Counts.Errored,
		"canceled", b.Counts.Canceled, "expired", b.Counts.Expired)
	return samples
}

// list pages through the credential's batches, newest first, until every
// open batch was seen or the listing is older than the oldest of them,
// noting the waiting batches its pages show too. The open batches it did
// not see are retrieved one by one. A failed list fails every open batch;
// a failed retrieve, its batch.
func (t *tracker) list(ctx context.Context, open, waiting []string, lk *looked) {
	d := t.d
	want := make(map[string]bool, len(open))
	for _, id := range open {
		want[id] = true
	}
	limit := min(1000, max(20, 2*len(open)))
	after := ""
	for page := 0; page < 10 && len(want) > 0; page++ {
		d.stats.managementCalls.Add(1)
		p, err := t.prov.ListBatches(ctx, t.cred, after, limit)
		if err != nil {
			for id := range want {
				lk.failed[id] = err
			}
			return
		}
		for i := range p.Batches {
			b := &p.Batches[i]
			if want[b.ID] || slices.Contains(waiting, b.ID) {
				lk.seen[b.ID] = b
				delete(want, b.ID)
			}
		}
		if !p.HasMore || p.LastID == "" {
			break
		}
		after = p.LastID
	}
	for id := range want {
		t.retrieve(ctx, id, lk)
	}
}

// giveUpFlight answers the requests of a batch that can no longer be
// looked at with the last error, so that no ticket waits forever.
func (t *tracker) giveUpFlight(f *flight) {
	d := t.d
	d.mu.Lock()
	cause := f.pollErr
	if !refused(cause) {
		cause = fmt.Errorf("%w: the batch could not be looked at until past its expiry (%v)", llmfleet.ErrResultMissing, cause)
	}
	answers := make([]answer, 0, len(f.waiters))
	for _, w := range f.waiters {
		answers = append(answers, answer{w: w, err: &llmfleet.BatchError{BatchID: f.id, Err: cause}})
	}
	d.mu.Unlock()
	d.log.Error("batch can no longer be looked at; answering its requests with the error", "provider", t.prov.Name(),
		"batch_id", f.id, "requests", len(answers), "failures", f.pollFailures, "err", cause)
	t.conclude(f, answers)
}

// conclude stores a flight's answers and, once stored, stops tracking it.
func (t *tracker) conclude(f *flight, answers []answer) bool {
	d := t.d
	d.mu.Lock()
	if t.flights[f.id] != f {
		// Given up by relinquishLocked: the batch may be another
		// replica's now, which delivers it (a late answer recorded once).
		// What its failure made this replica pay for, the sync calls of
		// its requests, is stored or ledgered late here all the same.
		d.mu.Unlock()
		d.answers.deliverRerouted(f.id, answers)
		return false
	}
	if !d.lease.held() {
		// Not known to own it any more: delivered once the lease is
		// renewed, or by the replica that adopted it.
		f.held, f.nextCheck = answers, d.clock.Now().Add(d.pol.MaxPollInterval)
		d.mu.Unlock()
		return false
	}
	d.mu.Unlock()
	ok := d.answers.deliver(answers, f.id, func() {
		if t.flights[f.id] == f { // (not given up by relinquishLocked)
			delete(t.flights, f.id)
			d.work.end()
		}
	})
	if !ok {
		d.mu.Lock()
		f.nextCheck = d.clock.Now().Add(d.pol.MaxPollInterval)
		t.holdFlightLocked(f, answers)
		d.mu.Unlock()
		return false
	}
	if err := d.journal.resolve(d.ctx, f.localID); err != nil {
		d.log.Warn("batch resolve not stored", "batch_id", f.id, "err", err)
	}
	return true
}

// holdFlightLocked keeps the answers of a flight that could not be
// stored, to be stored at its next check without reading its results
// again; a caller whose rescue time has come meanwhile is answered from
// its answer in hand (its rescue does so later for the others), rather
// than pay for its request again.
func (t *tracker) holdFlightLocked(f *flight, answers []answer) {
	d := t.d
	f.held = answers
	now := d.clock.Now()
	for i := range answers {
		w := answers[i].w
		if w.state == stateDone {
			continue
		}
		w.held = &answers[i]
		at := d.pol.RescueAt(w.deadline, d.syncLat.predict(w.prov.Name(), w.info.Model))
		if !at.IsZero() && !now.Before(at) && w.rescueTimer == nil && !w.rescuing {
			d.answers.replyHeldLocked(w)
		}
	}
}

// deliverRerouted delivers, of the answers of a flight given up
// (relinquishLocked), those that came from sync calls made when its batch
// failed as a whole (reroute): they are paid, and are stored, or ledgered
// late if the replica that took the batch stored first. The rest are the
// batch's, for whoever tracks it now.
func (an *answerer) deliverRerouted(batchID string, answers []answer) {
	var paid []answer
	for _, a := range answers {
		if a.resp != nil && a.resp.Route == llmfleet.RouteSync {
			paid = append(paid, a)
		}
	}
	if len(paid) > 0 {
		an.deliver(paid, batchID, nil)
	}
}
