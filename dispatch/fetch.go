package dispatch

import (
	"fmt"
	"time"

	"github.com/llmfleet/llmfleet"
)

// fetch reads an ended batch's results and delivers them (stored with
// their ledger entries before any caller is answered). If the results
// cannot be read or stored, the batch is tried again later; results that
// stay unreadable maxFetchFailures times in a row answer every request of
// the batch with ErrResultMissing.
func (d *Dispatcher) fetch(t *tracker, f *flight) {
	d.stats.managementCalls.Add(1)
	b := f.ended
	turnaround := b.EndedAt.Sub(b.CreatedAt)
	results := map[string]llmfleet.BatchResult{}
	ctx, cancel := d.withTimeout(d.ctx, resultsTimeout)
	err := t.prov.Results(ctx, t.cred, f.id, func(r llmfleet.BatchResult) error {
		results[r.CustomID] = r
		return nil
	})
	cancel()
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
	answers := make([]answer, 0, len(f.waiters))
	for id, w := range f.waiters {
		a := answer{w: w}
		if r, ok := results[id]; ok {
			a.resp, a.err = resultAnswer(f, w, r, turnaround)
		} else {
			a.err = &llmfleet.BatchError{BatchID: f.id, Err: fmt.Errorf("%w (custom_id %s)", missing, id)}
		}
		answers = append(answers, a)
	}
	d.mu.Unlock()
	if d.conclude(t, f, answers) {
		d.log.Info("batch results delivered", "provider", t.prov.Name(), "batch_id", f.id, "requests", len(answers))
	}
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
