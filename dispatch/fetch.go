package dispatch

import (
	"fmt"
	"maps"
	"sync/atomic"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/internal/genaiattr"
)

// fetch reads an ended batch's results and delivers them (stored with
// their ledger entries before any caller is answered). If the results
// cannot be read or stored, the batch is tried again later; results that
// stay unreadable maxFetchFailures times in a row answer every request of
// the batch with ErrResultMissing.
func (t *tracker) fetch(f *flight) {
	d := t.d
	d.mu.Lock()
	held := f.held
	links := waiterLinks(maps.Values(f.waiters))
	d.mu.Unlock()
	if held != nil {
		t.delivered(f, held) // read before, not stored yet: not read again
		return
	}
	d.stats.managementCalls.Add(1)
	b := f.ended
	turnaround := b.EndedAt.Sub(b.CreatedAt)
	results := map[string]llmfleet.BatchResult{}
	var err error
	if b.Failure == nil { // a batch that failed as a whole has no results
		ctx, cancel := withTimeout(d.clock, d.ctx, resultsTimeout)
		ctx, span := d.traces.batch(ctx, "results", t.prov, links, genaiattr.BatchID.String(f.id))
		err = t.prov.Results(ctx, t.cred, f.id, func(r llmfleet.BatchResult) error {
			results[r.CustomID] = r
			return nil
		})
		cancel()
		endBatch(span, err, batchSize(len(results)))
	}
	if d.ctx.Err() != nil {
		return
	}
	var missing error = llmfleet.ErrResultMissing
	if err != nil {
		d.mu.Lock()
		f.fetchFailures++
		n := f.fetchFailures
		d.mu.Unlock()
		if n < maxFetchFailures {
			d.log.Warn("batch results failed", "provider", t.prov.Name(), "batch_id", f.id, "failures", n, "err", err)
			d.mu.Lock()
			f.nextCheck = d.clock.Now().Add(d.pol.RetryAfter(n - 1))
			d.mu.Unlock()
			return
		}
		// Nothing waits forever: the results stayed unreadable.
		d.log.Error("batch results unreadable; giving up", "batch_id", f.id, "tries", n, "err", err)
		missing = fmt.Errorf("%w: the batch's results could not be read (%v)", llmfleet.ErrResultMissing, err)
		results = nil
	}
	d.mu.Lock()
	answers, unanswered := resultAnswers(f, results, missing, turnaround)
	if len(unanswered) > 0 {
		// The sync calls run in goroutines of their own; the last to end
		// concludes the flight, which no poll fetches meanwhile.
		f.rerouting = true
		d.mu.Unlock()
		t.reroute(f, unanswered, func(rerouted []answer) {
			t.delivered(f, append(answers, rerouted...))
			d.mu.Lock()
			f.rerouting = false
			if d.trackers.m[t.key] == t {
				t.rescheduleLocked()
			}
			d.mu.Unlock()
		})
		return
	}
	d.mu.Unlock()
	t.delivered(f, answers)
}

// delivered concludes a flight with its answers and logs it.
func (t *tracker) delivered(f *flight, answers []answer) {
	d := t.d
	if t.conclude(f, answers) {
		d.log.Info("batch results delivered", "provider", t.prov.Name(), "batch_id", f.id, "requests", len(answers))
	}
}

// resultAnswers turns the results of an ended flight into its requests'
// answers; unanswered are those of a batch that failed as a whole.
func resultAnswers(f *flight, results map[string]llmfleet.BatchResult, missing error, turnaround time.Duration) (answers []answer, unanswered []*waiter) {
	answers = make([]answer, 0, len(f.waiters))
	for id, w := range f.waiters {
		a := answer{w: w}
		switch r, ok := results[id]; {
		case ok:
			a.resp, a.err = resultAnswer(f, w, r, turnaround)
		case f.ended.Failure != nil:
			unanswered = append(unanswered, w)
			continue
		default:
			a.err = &llmfleet.BatchError{BatchID: f.id, Err: fmt.Errorf("%w (custom_id %s)", missing, id)}
		}
		answers = append(answers, a)
	}
	return answers, unanswered
}

// resultAnswer turns one batch result into what its caller gets.
func resultAnswer(f *flight, w *waiter, r llmfleet.BatchResult, turnaround time.Duration) (*llmfleet.Response, error) {
	switch r.Type {
	case llmfleet.ResultSucceeded:
		return &llmfleet.Response{
			Route:           llmfleet.RouteBatch,
			StatusCode:      200,
			Body:            r.Message,
			BatchID:         f.id,
			CustomID:        r.CustomID,
			Usage:           r.Usage,
			Model:           r.Model,
			RequestID:       w.id,
			Queued:          f.submitted.Sub(w.arrived),
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

// rerouteConcurrency bounds the sync calls made at once for the requests
// of a batch that failed as a whole.
const rerouteConcurrency = 8

// reroute answers the requests of a batch that failed as a whole after it
// was created (llmfleet.Batch.Failure: none of them ran): a request whose
// deadline leaves room for a sync call (its model's predicted sync latency
// and RescueMargin) is sent sync now, and gets that call's answer; any
// other, and one without a budget (it asked for a batch, not for the full
// price), gets the provider's error for the batch. The calls run in at
// most rerouteConcurrency goroutines of the dispatcher's (its Go hook),
// which wait for nothing but the calls; then, in the last of them (or at
// once when no call is to be made), done gets every answer.
func (t *tracker) reroute(f *flight, ws []*waiter, done func([]answer)) {
	d := t.d
	failure := f.ended.Failure
	d.log.Warn("batch failed as a whole; its requests go sync where their budget allows", "provider", t.prov.Name(),
		"batch_id", f.id, "requests", len(ws), "type", failure.Type, "message", failure.Message)
	answers := make([]answer, len(ws))
	var todo []int
	d.mu.Lock()
	for i, w := range ws {
		answers[i] = answer{w: w, err: &llmfleet.BatchError{BatchID: f.id, Err: failure}}
		if w.state == stateDone || w.answered {
			continue // answered already (a rescue): no second call
		}
		if w.deadline.IsZero() || w.deadline.Sub(d.clock.Now()) < d.syncLat.predict(t.prov.Name(), w.info.Model)+d.pol.RescueMargin {
			continue
		}
		todo = append(todo, i)
	}
	d.mu.Unlock()
	if len(todo) == 0 {
		done(answers)
		return
	}
	jobs := make(chan int, len(todo))
	for _, i := range todo {
		jobs <- i
	}
	close(jobs)
	workers := min(rerouteConcurrency, len(todo))
	var left atomic.Int32
	left.Store(int32(workers))
	for range workers {
		d.work.run(func() {
			for i := range jobs { // (never blocks: filled, then closed)
				t.rerouteOne(t.prov, &answers[i])
			}
			if left.Add(-1) == 0 {
				done(answers)
			}
		})
	}
}

// rerouteOne sends a's request sync, within its deadline, and makes its
// answer that call's.
func (t *tracker) rerouteOne(p llmfleet.Provider, a *answer) {
	d := t.d
	w := a.w
	ctx, cancel := withTimeout(d.clock, d.ctx, w.deadline.Sub(d.clock.Now()))
	defer cancel()
	req := &llmfleet.Request{Provider: w.req.Provider, Credential: w.req.Credential, Header: w.req.Header,
		Endpoint: w.req.Endpoint, Body: w.plain, Client: w.req.Client}
	d.stats.syncCalls.Add(1)
	start := d.clock.Now()
	resp, err := p.Send(ctx, req)
	if err != nil {
		a.err = err
		return
	}
	if !d.pol.NoLearning {
		d.syncLat.observe(p.Name(), resp.Model, d.clock.Now().Sub(start))
	}
	resp.Route, resp.RequestID = llmfleet.RouteSync, w.id
	*a = answer{w: w, resp: resp}
}
