package dispatch

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"time"

	"github.com/llmfleet/llmfleet"
)

// persist records a request accepted for batching, and its sealed
// credential the first time that credential is seen. Without a Store it
// does nothing.
func (d *Dispatcher) persist(ctx context.Context, p llmfleet.Provider, w *waiter) error {
	if d.Store == nil {
		return nil
	}
	fp := d.fingerprint(w.req.Credential)
	d.mu.Lock()
	known := d.sealed[fp]
	d.mu.Unlock()
	if !known {
		sealed, err := d.Sealer.Seal(w.req.Credential)
		if err != nil {
			return fmt.Errorf("dispatch: sealing credential: %w", err)
		}
		if err := d.Store.PutCredential(ctx, fp, sealed); err != nil {
			return fmt.Errorf("dispatch: storing credential: %w", err)
		}
		d.mu.Lock()
		d.sealed[fp] = true
		d.mu.Unlock()
	}
	err := d.Store.AddRequest(ctx, &llmfleet.StoredRequest{
		ID:           w.id,
		Provider:     p.Name(),
		CredentialID: fp,
		Header:       w.req.Header,
		Body:         w.req.Body,
		Model:        w.model,
		Budget:       w.budget,
		AcceptedAt:   w.enqueued,
		Deadline:     w.deadline,
		State:        llmfleet.RequestQueued,
	})
	if err != nil {
		return fmt.Errorf("dispatch: storing request: %w", err)
	}
	return nil
}

// recordIntent records a batch about to be created, before the call.
func (d *Dispatcher) recordIntent(ctx context.Context, p llmfleet.Provider, first *llmfleet.Request, batchID string, intentAt time.Time, ws []*waiter) error {
	if d.Store == nil {
		return nil
	}
	ids := make(map[string]string, len(ws))
	for _, w := range ws {
		ids[w.id] = w.customID
	}
	err := d.Store.RecordIntent(ctx, &llmfleet.StoredBatch{
		ID:           batchID,
		Provider:     p.Name(),
		CredentialID: d.fingerprint(first.Credential),
		State:        llmfleet.BatchIntent,
		Size:         len(ws),
		IntentAt:     intentAt,
	}, ids)
	if err != nil {
		return fmt.Errorf("dispatch: storing batch intent: %w", err)
	}
	return nil
}

// recordCreated records the provider's id right after the create call. A
// failure here is logged: the intent stays, and a restart reconciles it.
func (d *Dispatcher) recordCreated(ctx context.Context, batchID string, b *llmfleet.Batch) {
	if d.Store == nil {
		return
	}
	if err := d.Store.RecordCreated(ctx, batchID, b.ID, b.CreatedAt); err != nil {
		d.log.Error("batch id not stored; a restart will reconcile it", "batch_id", b.ID, "err", err)
	}
}

// recordCreateFailed stores the failure as every request's answer, then
// marks the batch failed.
func (d *Dispatcher) recordCreateFailed(ctx context.Context, batchID string, ws []*waiter, cause error) {
	if d.Store == nil {
		return
	}
	now := d.clock.Now()
	results := make(map[string]*llmfleet.StoredResult, len(ws))
	for _, w := range ws {
		results[w.id] = storedResult(nil, cause, now)
	}
	if err := d.Store.CompleteRequests(ctx, results); err != nil {
		d.log.Error("failed create not stored", "err", err)
		return
	}
	if err := d.Store.RecordCreateFailed(ctx, batchID, false); err != nil {
		d.log.Error("failed create not stored", "err", err)
	}
}

// recordEnded stores that a batch ended; called with mu held, it writes in
// the background.
func (d *Dispatcher) recordEnded(f *flight, b *llmfleet.Batch) {
	if d.Store == nil {
		return
	}
	id, ended := f.localID, b.EndedAt
	d.goOwned(func() {
		if err := d.Store.RecordEnded(d.ctx, id, ended); err != nil {
			d.log.Warn("batch end not stored", "batch_id", b.ID, "err", err)
		}
	})
}

// storedResult is the answer to keep for a request: the Message, or the
// status and envelope the sync API would have answered.
func storedResult(resp *llmfleet.Response, err error, now time.Time) *llmfleet.StoredResult {
	if err == nil {
		return &llmfleet.StoredResult{StatusCode: http.StatusOK, Body: resp.Body, Usage: resp.Usage, CompletedAt: now}
	}
	status, body := llmfleet.ErrorAnswer(err)
	return &llmfleet.StoredResult{StatusCode: status, Body: body, CompletedAt: now}
}

// observeLocked hands the ledger entry of an answered request to Observe.
func (d *Dispatcher) observeLocked(w *waiter, resp *llmfleet.Response, err error) {
	if d.Observe == nil {
		return
	}
	now := d.clock.Now()
	e := llmfleet.LedgerEntry{
		RequestID: w.id,
		Time:      now,
		Provider:  w.provider,
		Model:     w.model,
		Route:     llmfleet.RouteBatch,
		Outcome:   llmfleet.Outcome(err),
		Latency:   now.Sub(w.enqueued),
		Budget:    w.budget,
	}
	var be *llmfleet.BatchError
	if errors.As(err, &be) {
		e.BatchID = be.BatchID
	}
	if resp != nil {
		e.BatchID = resp.BatchID
		e.Usage = resp.Usage
		if resp.Model != "" {
			e.Model = resp.Model
		}
		e.Queued = resp.Queued
		e.Turnaround = resp.BatchTurnaround
	} else if !w.submitted.IsZero() {
		e.Queued = w.submitted.Sub(w.enqueued)
	}
	e.BudgetMet = err == nil && (w.budget == 0 || e.Latency <= w.budget)
	d.Observe(e)
}

// Enqueue accepts a request for batching without waiting for its answer
// and returns llmfleet's id of it; the answer is stored and read with
// Lookup. It needs a Store.
func (d *Dispatcher) Enqueue(ctx context.Context, budget time.Duration, req *llmfleet.Request) (string, error) {
	if d.Store == nil {
		return "", fmt.Errorf("dispatch: Enqueue needs a Store: %w", llmfleet.ErrNoStore)
	}
	p, err := d.provider(req)
	if err != nil {
		return "", err
	}
	now := d.clock.Now()
	w := &waiter{id: requestID(req), req: req, provider: p.Name(), model: modelOf(req.Body), enqueued: now,
		budget: budget, detached: true, done: make(chan outcome, 1)}
	if budget > 0 {
		w.deadline = now.Add(budget)
	}
	if err := d.checkSize(p, w); err != nil {
		return "", err
	}
	if err := d.persist(ctx, p, w); err != nil {
		return "", err
	}
	if err := d.enqueue(p, w); err != nil {
		return "", err
	}
	d.stats.batchedCalls.Add(1)
	return w.id, nil
}

// Lookup returns a stored request and, once answered, its result. Only the
// credential that submitted a request may read it: for any other it
// returns llmfleet.ErrNotFound.
func (d *Dispatcher) Lookup(ctx context.Context, id string, cred llmfleet.Credential) (*llmfleet.StoredRequest, error) {
	if d.Store == nil {
		return nil, llmfleet.ErrNotFound
	}
	r, err := d.Store.GetRequest(ctx, id)
	if err != nil {
		return nil, err
	}
	if r.CredentialID != d.fingerprint(cred) {
		return nil, llmfleet.ErrNotFound
	}
	return r, nil
}

// recover picks up what a previous process left in the Store.
func (d *Dispatcher) recover(ctx context.Context) error {
	queued, batches, err := d.Store.Pending(ctx)
	if err != nil {
		return err
	}
	creds := map[string]llmfleet.Credential{}
	credential := func(id string) (llmfleet.Credential, error) {
		if c, ok := creds[id]; ok {
			return c, nil
		}
		sealed, err := d.Store.GetCredential(ctx, id)
		if err != nil {
			return llmfleet.Credential{}, fmt.Errorf("credential %s: %w", id, err)
		}
		c, err := d.Sealer.Unseal(id, sealed)
		if err != nil {
			return llmfleet.Credential{}, fmt.Errorf("credential %s: %w", id, err)
		}
		creds[id] = c
		d.mu.Lock()
		d.sealed[id] = true
		d.mu.Unlock()
		return c, nil
	}
	revive := func(r *llmfleet.StoredRequest) (llmfleet.Provider, *waiter, error) {
		cred, err := credential(r.CredentialID)
		if err != nil {
			return nil, nil, err
		}
		req := &llmfleet.Request{Provider: r.Provider, Credential: cred, Header: r.Header, Body: r.Body}
		p, err := d.provider(req)
		if err != nil {
			return nil, nil, err
		}
		return p, &waiter{id: r.ID, req: req, provider: p.Name(), model: r.Model, enqueued: r.AcceptedAt, deadline: r.Deadline,
			budget: r.Budget, detached: true, customID: r.CustomID, done: make(chan outcome, 1)}, nil
	}

	// Batches first: an intent that never reached the provider puts its
	// requests back in the queue.
	known := map[string]bool{}
	for _, pb := range batches {
		if pb.Batch.UpstreamID != "" {
			known[pb.Batch.UpstreamID] = true
		}
	}
	sort.Slice(batches, func(i, j int) bool { return batches[i].Batch.IntentAt.Before(batches[j].Batch.IntentAt) })
	for _, pb := range batches {
		var ws []*waiter
		var prov llmfleet.Provider
		var cred llmfleet.Credential
		for _, r := range pb.Requests {
			p, w, err := revive(r)
			if err != nil {
				d.log.Error("stored request cannot be recovered", "request_id", r.ID, "err", err)
				continue
			}
			prov, cred = p, w.req.Credential
			ws = append(ws, w)
		}
		if len(pb.Requests) == 0 {
			// Every request of it was answered before the crash: a
			// created batch was resolved but not marked so, an intent's
			// create call failed.
			mark := d.Store.ResolveBatch
			if pb.Batch.State == llmfleet.BatchIntent {
				mark = func(ctx context.Context, id string) error { return d.Store.RecordCreateFailed(ctx, id, false) }
			}
			if err := mark(ctx, pb.Batch.ID); err != nil {
				return err
			}
			continue
		}
		if len(ws) == 0 {
			// Its credential cannot be unsealed (another secret?): keep
			// the batch pending, for a start that can.
			d.log.Error("stored batch cannot be recovered; kept for the next start", "batch", pb.Batch.ID, "requests", len(pb.Requests))
			continue
		}
		b := &llmfleet.Batch{ID: pb.Batch.UpstreamID, Status: llmfleet.BatchInProgress, CreatedAt: pb.Batch.CreatedAt}
		if pb.Batch.State == llmfleet.BatchIntent {
			found, err := d.reconcile(ctx, prov, cred, pb, known)
			if err != nil {
				return fmt.Errorf("reconciling batch %s: %w", pb.Batch.ID, err)
			}
			if found == nil {
				d.log.Info("batch intent was never created; requeueing", "batch", pb.Batch.ID, "requests", len(ws))
				if err := d.Store.RecordCreateFailed(ctx, pb.Batch.ID, true); err != nil {
					return err
				}
				for _, w := range ws {
					w.customID = ""
					if err := d.enqueue(prov, w); err != nil {
						return err
					}
				}
				continue
			}
			known[found.ID] = true
			b = found
			d.log.Info("batch intent reconciled with the provider", "batch", pb.Batch.ID, "batch_id", found.ID)
			if err := d.Store.RecordCreated(ctx, pb.Batch.ID, found.ID, found.CreatedAt); err != nil {
				return err
			}
		}
		d.mu.Lock()
		d.trackLocked(prov, cred, pb.Batch.ID, b, ws)
		d.mu.Unlock()
		d.log.Info("batch in flight recovered", "batch_id", b.ID, "requests", len(ws))
	}
	for _, r := range queued {
		p, w, err := revive(r)
		if err != nil {
			d.log.Error("stored request cannot be recovered", "request_id", r.ID, "err", err)
			continue
		}
		if err := d.enqueue(p, w); err != nil {
			// No batch can take it (stored by an older version): answer it
			// with the error rather than refuse to start.
			d.log.Error("stored request cannot be queued again", "request_id", r.ID, "err", err)
			res := map[string]*llmfleet.StoredResult{r.ID: storedResult(nil, err, d.clock.Now())}
			if err := d.Store.CompleteRequests(ctx, res); err != nil {
				return err
			}
		}
	}
	if n := len(queued) + len(batches); n > 0 {
		d.log.Info("recovered stored state", "queued", len(queued), "batches", len(batches))
	}
	return nil
}

// reconcile looks for the provider batch a recorded intent may have
// created: one of the same size, created at or after the intent (less a
// clock skew allowance), whose id no other stored batch holds. A batch
// that has ended is taken only if its results carry the intent's
// custom_ids, which name the local batch: so a batch this store resolved
// earlier is never mistaken for it. Of the batches that qualify, the
// oldest is taken. It returns nil if there is none, so the requests can
// be queued again without paying twice.
func (d *Dispatcher) reconcile(ctx context.Context, p llmfleet.Provider, cred llmfleet.Credential, pb *llmfleet.PendingBatch, known map[string]bool) (*llmfleet.Batch, error) {
	const skew = 2 * time.Minute
	sb := pb.Batch
	after := ""
	var cands []llmfleet.Batch // newest first, as listed
	for page := 0; page < 20; page++ {
		d.stats.managementCalls.Add(1)
		pg, err := p.ListBatches(ctx, cred, after, 100)
		if err != nil {
			return nil, err
		}
		older := false
		for _, b := range pg.Batches {
			if b.CreatedAt.Before(sb.IntentAt.Add(-skew)) {
				older = true
				continue
			}
			if known[b.ID] || b.Counts.Total() != sb.Size {
				continue
			}
			cands = append(cands, b)
		}
		if older || !pg.HasMore || pg.LastID == "" {
			break
		}
		after = pg.LastID
	}
	mine := make(map[string]bool, len(pb.Requests))
	for _, r := range pb.Requests {
		mine[r.CustomID] = true
	}
	for i := len(cands) - 1; i >= 0; i-- {
		b := cands[i]
		if b.Status != llmfleet.BatchEnded {
			return &b, nil
		}
		ok, err := d.holds(ctx, p, cred, b.ID, mine)
		if err != nil {
			return nil, err
		}
		if ok {
			return &b, nil
		}
	}
	return nil, nil
}

// holds reports whether the ended batch id holds requests whose custom_ids
// are in mine, judging by its first result: custom_ids name their local
// batch, so no other batch carries them.
func (d *Dispatcher) holds(ctx context.Context, p llmfleet.Provider, cred llmfleet.Credential, id string, mine map[string]bool) (bool, error) {
	seen, found := false, false
	d.stats.managementCalls.Add(1)
	err := p.Results(ctx, cred, id, func(r llmfleet.BatchResult) error {
		seen, found = true, mine[r.CustomID]
		return errSeen
	})
	if err != nil && !seen {
		return false, err
	}
	return found, nil
}

// errSeen stops a results stream after its first result.
var errSeen = errors.New("dispatch: first result seen")

// purgeLoop deletes stored results older than the retention period, once
// at start and then hourly, until the dispatcher closes.
func (d *Dispatcher) purgeLoop() {
	for {
		now := d.clock.Now()
		n, err := d.Store.Purge(d.ctx, now.Add(-d.Retention), now.Add(-d.LedgerRetention))
		if err != nil && d.ctx.Err() == nil {
			d.log.Warn("purge failed", "err", err)
		} else if n > 0 {
			d.log.Info("purged old results", "records", n)
		}
		if !d.sleep(time.Hour) {
			return
		}
	}
}
