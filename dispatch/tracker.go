package dispatch

import (
	"context"
	"fmt"
	"time"

	"github.com/llmfleet/llmfleet"
)

// resultsTimeout bounds one download of a batch's results, and
// maxFetchFailures is how many failed downloads in a row make the
// dispatcher answer the batch's requests with llmfleet.ErrResultMissing.
const (
	resultsTimeout   = 10 * time.Minute
	maxFetchFailures = 8
)

// pollTimeout bounds the status calls (retrieve, list) of one poll.
const pollTimeout = time.Minute

// tracker follows the in-flight batches of one provider and credential,
// so that one upstream call answers for all of them.
type tracker struct {
	key      string
	provider llmfleet.Provider
	cred     llmfleet.Credential
	batches  map[string]*flight
	timer    llmfleet.Timer
	timerAt  time.Time
	busy     bool // a poll or a results fetch is under way
}

// flight is one batch in flight upstream.
type flight struct {
	id        string    // the provider's batch id
	localID   string    // llmfleet's batch id
	submitted time.Time // local clock, when the create call returned
	predicted time.Duration
	models    []string
	waiters   map[string]*waiter // by custom_id
	nextCheck time.Time
	ended     *llmfleet.Batch // set once the provider reports it ended
	// fetchFailures counts failed result downloads in a row.
	fetchFailures int
}

func (t *tracker) stopLocked() {
	if t.timer != nil {
		t.timer.Stop()
		t.timer = nil
	}
}

// trackLocked starts tracking a newly created batch.
func (d *Dispatcher) trackLocked(prov llmfleet.Provider, cred llmfleet.Credential, localID string, b *llmfleet.Batch, ws []*waiter) {
	key := prov.Name() + "\x00" + d.fingerprint(cred)
	t := d.trackers[key]
	if t == nil {
		t = &tracker{key: key, provider: prov, cred: cred, batches: map[string]*flight{}}
		d.trackers[key] = t
	}
	now := d.clock.Now()
	f := &flight{id: b.ID, localID: localID, submitted: now, waiters: make(map[string]*waiter, len(ws))}
	seen := map[string]bool{}
	for _, w := range ws {
		w.state = stateInFlight
		w.submitted = now
		f.waiters[w.customID] = w
		if !seen[w.model] {
			seen[w.model] = true
			f.models = append(f.models, w.model)
			f.predicted = max(f.predicted, d.predictor.predict(prov.Name(), w.model))
		}
	}
	if b.Status == llmfleet.BatchEnded {
		f.ended = b
		f.nextCheck = now
	} else {
		f.nextCheck = d.nextCheck(f, now)
	}
	t.batches[f.id] = f
	d.beginWorkLocked()
	d.rescheduleLocked(t)
}

// nextCheck returns when a batch should next be looked at. Before its
// predicted end: half the time left, so the checks tighten towards the
// end. After it: a quarter of the overrun, so a late batch is checked less
// and less often. Either way at least Policy.PollInterval and at most the
// larger of Policy.MaxPollInterval and a tenth of the batch's expected
// or actual age, which bounds the delivery delay of a long batch to about
// 10% of its turnaround while keeping its polls few.
func (d *Dispatcher) nextCheck(f *flight, now time.Time) time.Time {
	age := now.Sub(f.submitted)
	left := f.predicted - age
	iv := left / 2
	ceiling := max(d.pol.MaxPollInterval, f.predicted/10)
	if left <= 0 {
		iv = -left / 4
		ceiling = max(d.pol.MaxPollInterval, age/10)
	}
	iv = max(d.pol.PollInterval, min(iv, ceiling))
	return now.Add(iv)
}

// rescheduleLocked sets the tracker's timer to its earliest due batch.
func (d *Dispatcher) rescheduleLocked(t *tracker) {
	if t.busy {
		return
	}
	if len(t.batches) == 0 {
		t.stopLocked()
		delete(d.trackers, t.key)
		return
	}
	var at time.Time
	for _, f := range t.batches {
		if at.IsZero() || f.nextCheck.Before(at) {
			at = f.nextCheck
		}
	}
	if t.timer != nil && t.timerAt.Equal(at) {
		return
	}
	t.stopLocked()
	t.timerAt = at
	wait := at.Sub(d.clock.Now())
	t.timer = d.clock.AfterFunc(max(wait, 0), func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.ctx.Err() != nil || t.busy || !t.timerAt.Equal(at) {
			return
		}
		t.timer = nil
		t.busy = true
		d.goOwned(func() { d.poll(t) })
	})
}

// poll looks at every in-flight batch of the tracker with as few calls as
// it can, then fetches the results of the batches that ended.
func (d *Dispatcher) poll(t *tracker) {
	d.mu.Lock()
	var open []string
	var ended []*flight
	oldest := time.Time{}
	for id, f := range t.batches {
		if f.ended != nil {
			ended = append(ended, f)
			continue
		}
		open = append(open, id)
		if oldest.IsZero() || f.submitted.Before(oldest) {
			oldest = f.submitted
		}
	}
	d.mu.Unlock()

	ctx := d.ctx
	seen := map[string]*llmfleet.Batch{}
	var pollErr error
	// The status calls are bounded, so that one that never answers does
	// not stall every batch of the credential: the poll fails and the
	// batches are looked at again at their next check.
	pctx, cancel := context.WithTimeout(ctx, pollTimeout)
	switch {
	case len(open) == 1:
		d.stats.managementCalls.Add(1)
		b, err := t.provider.GetBatch(pctx, t.cred, open[0])
		if err != nil {
			pollErr = err
		} else {
			seen[b.ID] = b
		}
	case len(open) > 1:
		pollErr = d.list(pctx, t, open, seen)
	}
	cancel()

	d.mu.Lock()
	now := d.clock.Now()
	if pollErr != nil {
		d.log.Warn("batch poll failed", "provider", t.provider.Name(), "credential", t.cred.String(), "batches", len(open), "err", pollErr)
	}
	for _, id := range open {
		f := t.batches[id]
		if f == nil {
			continue
		}
		b := seen[id]
		if b == nil || b.Status != llmfleet.BatchEnded {
			f.nextCheck = d.nextCheck(f, now)
			continue
		}
		f.ended = b
		d.stats.batchesEnded.Add(1)
		d.recordEnded(f, b)
		turnaround := b.EndedAt.Sub(b.CreatedAt)
		for _, m := range f.models {
			d.predictor.observe(t.provider.Name(), m, turnaround)
			if d.ObserveTurnaround != nil {
				d.ObserveTurnaround(t.provider.Name(), m, turnaround)
			}
		}
		d.log.Info("batch ended", "provider", t.provider.Name(), "batch_id", id,
			"turnaround", turnaround, "seen_after", now.Sub(f.submitted),
			"succeeded", b.Counts.Succeeded, "errored", b.Counts.Errored,
			"canceled", b.Counts.Canceled, "expired", b.Counts.Expired)
		ended = append(ended, f)
	}
	d.mu.Unlock()

	for _, f := range ended {
		d.fetch(ctx, t, f)
	}

	d.mu.Lock()
	t.busy = false
	d.rescheduleLocked(t)
	d.mu.Unlock()
}

// list pages through the credential's batches, newest first, until every
// open batch was seen or the listing is older than the oldest of them. The
// open batches it did not see are retrieved one by one.
func (d *Dispatcher) list(ctx context.Context, t *tracker, open []string, seen map[string]*llmfleet.Batch) error {
	want := make(map[string]bool, len(open))
	for _, id := range open {
		want[id] = true
	}
	limit := min(1000, max(20, 2*len(open)))
	after := ""
	for page := 0; page < 10 && len(want) > 0; page++ {
		d.stats.managementCalls.Add(1)
		p, err := t.provider.ListBatches(ctx, t.cred, after, limit)
		if err != nil {
			return err
		}
		for i := range p.Batches {
			b := &p.Batches[i]
			if want[b.ID] {
				seen[b.ID] = b
				delete(want, b.ID)
			}
		}
		if !p.HasMore || p.LastID == "" {
			break
		}
		after = p.LastID
	}
	for id := range want {
		d.stats.managementCalls.Add(1)
		b, err := t.provider.GetBatch(ctx, t.cred, id)
		if err != nil {
			return err
		}
		seen[id] = b
	}
	return nil
}

// fetch reads an ended batch's results, stores them, and then answers
// their waiters. If the results cannot be read or stored, the batch is
// tried again at the next poll.
func (d *Dispatcher) fetch(ctx context.Context, t *tracker, f *flight) {
	d.stats.managementCalls.Add(1)
	b := f.ended
	turnaround := b.EndedAt.Sub(b.CreatedAt)
	results := map[string]llmfleet.BatchResult{}
	rctx, cancel := context.WithTimeout(ctx, resultsTimeout)
	err := t.provider.Results(rctx, t.cred, f.id, func(r llmfleet.BatchResult) error {
		results[r.CustomID] = r
		return nil
	})
	cancel()
	var missing error = llmfleet.ErrResultMissing
	if err != nil && ctx.Err() == nil {
		d.mu.Lock()
		f.fetchFailures++
		final := f.fetchFailures >= maxFetchFailures
		d.mu.Unlock()
		if final {
			// Nothing waits forever: the results stayed unreadable, so
			// every request of the batch is answered with that.
			d.log.Error("batch results unreadable; giving up", "batch_id", f.id, "tries", maxFetchFailures, "err", err)
			missing = fmt.Errorf("%w: the batch's results could not be read (%v)", llmfleet.ErrResultMissing, err)
			results, err = nil, nil
		}
	}
	type answer struct {
		w    *waiter
		resp *llmfleet.Response
		err  error
	}
	var answers []answer
	if err == nil {
		d.mu.Lock()
		for id, w := range f.waiters {
			a := answer{w: w}
			if r, ok := results[id]; ok {
				a.resp, a.err = d.outcome(f, w, r, turnaround)
			} else {
				a.err = &llmfleet.BatchError{BatchID: f.id, Err: fmt.Errorf("%w (custom_id %s)", missing, id)}
			}
			answers = append(answers, a)
		}
		d.mu.Unlock()
		if d.Store != nil {
			stored := make(map[string]*llmfleet.StoredResult, len(answers))
			for _, a := range answers {
				stored[a.w.id] = storedResult(a.resp, a.err, d.clock.Now())
			}
			err = d.Store.CompleteRequests(ctx, stored)
			if err == nil {
				if rerr := d.Store.ResolveBatch(ctx, f.localID); rerr != nil {
					d.log.Warn("batch resolve not stored", "batch_id", f.id, "err", rerr)
				}
			}
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err != nil {
		d.log.Warn("batch results failed", "provider", t.provider.Name(), "batch_id", f.id, "err", err)
		backoff := d.pol.PollInterval << min(f.fetchFailures, 10)
		f.nextCheck = d.clock.Now().Add(min(backoff, d.pol.MaxPollInterval))
		return
	}
	for _, a := range answers {
		delete(f.waiters, a.w.customID)
		d.finishLocked(a.w, a.resp, a.err)
	}
	delete(t.batches, f.id)
	d.endWorkLocked()
	d.log.Info("batch results delivered", "provider", t.provider.Name(), "batch_id", f.id, "requests", len(answers))
}

// outcome turns one batch result into what its caller gets.
func (d *Dispatcher) outcome(f *flight, w *waiter, r llmfleet.BatchResult, turnaround time.Duration) (*llmfleet.Response, error) {
	switch r.Type {
	case llmfleet.ResultSucceeded:
		info, _ := llmfleet.ParseMessageInfo(r.Message)
		return &llmfleet.Response{
			Route:           llmfleet.RouteBatch,
			StatusCode:      200,
			Body:            r.Message,
			BatchID:         f.id,
			CustomID:        r.CustomID,
			Usage:           info.Usage,
			Model:           info.Model,
			RequestID:       w.id,
			Queued:          f.submitted.Sub(w.enqueued),
			BatchTurnaround: turnaround,
		}, nil
	case llmfleet.ResultErrored:
		if r.Error != nil {
			return nil, &llmfleet.BatchError{BatchID: f.id, Err: r.Error}
		}
		return nil, &llmfleet.BatchError{BatchID: f.id, Err: &llmfleet.Error{StatusCode: 500, Type: "api_error", Message: "batch request errored without an error body"}}
	case llmfleet.ResultCanceled:
		return nil, &llmfleet.BatchError{BatchID: f.id, Err: llmfleet.ErrBatchCanceled}
	case llmfleet.ResultExpired:
		return nil, &llmfleet.BatchError{BatchID: f.id, Err: llmfleet.ErrBatchExpired}
	default:
		return nil, &llmfleet.BatchError{BatchID: f.id, Err: fmt.Errorf("llmfleet: unknown batch result type %q", r.Type)}
	}
}
