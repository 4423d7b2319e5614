package dispatch

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/llmfleet/llmfleet"
)

// journal records the money path: requests before they are acknowledged,
// a batch's intent before its create, its upstream id, results and their
// ledger entries together. The dispatcher has one always: a Store-backed
// one, or nopJournal, which keeps nothing.
type journal interface {
	// durable reports whether answers outlive their callers (a caller
	// that leaves does not withdraw its request).
	durable() bool
	// accept records a request accepted for batching.
	accept(ctx context.Context, w *waiter) error
	// intent records a batch about to be created, with its requests.
	intent(ctx context.Context, b *llmfleet.StoredBatch, ws []*waiter) error
	// created records the provider's id of a batch.
	created(ctx context.Context, localID string, b *llmfleet.Batch) error
	// requeue marks a batch proven not created and puts its requests back
	// in the queue.
	requeue(ctx context.Context, localID string) error
	// failed marks a batch whose create was refused, its requests done.
	failed(ctx context.Context, localID string) error
	// ended records that a batch ended upstream.
	ended(ctx context.Context, localID string, at time.Time) error
	// complete stores results and their ledger entries in one
	// transaction and reports, per completion, whether it completed its
	// request (false: the request was done already; see
	// llmfleet.Store.CompleteRequests).
	complete(ctx context.Context, done []llmfleet.Completion) ([]bool, error)
	// resolve marks a batch whose requests were all answered.
	resolve(ctx context.Context, localID string) error
	// ledger records entries that complete no request (an answer paid
	// and not delivered).
	ledger(ctx context.Context, entries []llmfleet.LedgerEntry) error
	// turnarounds records observed batch turnarounds.
	turnarounds(ctx context.Context, samples []llmfleet.TurnaroundSample) error
}

// nopJournal keeps nothing: answers live only as long as their callers.
type nopJournal struct{}

func (nopJournal) durable() bool                                                  { return false }
func (nopJournal) accept(context.Context, *waiter) error                          { return nil }
func (nopJournal) intent(context.Context, *llmfleet.StoredBatch, []*waiter) error { return nil }
func (nopJournal) created(context.Context, string, *llmfleet.Batch) error         { return nil }
func (nopJournal) requeue(context.Context, string) error                          { return nil }
func (nopJournal) failed(context.Context, string) error                           { return nil }
func (nopJournal) ended(context.Context, string, time.Time) error                 { return nil }
func (nopJournal) complete(_ context.Context, done []llmfleet.Completion) ([]bool, error) {
	kept := make([]bool, len(done))
	for i := range kept {
		kept[i] = true
	}
	return kept, nil
}
func (nopJournal) resolve(context.Context, string) error                          { return nil }
func (nopJournal) ledger(context.Context, []llmfleet.LedgerEntry) error           { return nil }
func (nopJournal) turnarounds(context.Context, []llmfleet.TurnaroundSample) error { return nil }

// storeJournal records in a Store, sealing each credential once.
type storeJournal struct {
	store  llmfleet.Store
	sealer llmfleet.Sealer

	mu     sync.Mutex
	sealed map[string]bool // fingerprints whose sealed credential is stored
}

func (j *storeJournal) durable() bool { return true }

func (j *storeJournal) accept(ctx context.Context, w *waiter) error {
	fp := j.sealer.Fingerprint(w.req.Credential)
	j.mu.Lock()
	known := j.sealed[fp]
	j.mu.Unlock()
	if !known {
		sealed, err := j.sealer.Seal(w.req.Credential)
		if err != nil {
			return fmt.Errorf("dispatch: sealing credential: %w", err)
		}
		if err := j.store.PutCredential(ctx, fp, sealed); err != nil {
			return fmt.Errorf("dispatch: storing credential: %w: %w", llmfleet.ErrStore, err)
		}
		j.markSealed(fp)
	}
	err := j.store.AddRequest(ctx, &llmfleet.StoredRequest{
		ID:           w.id,
		Provider:     w.prov.Name(),
		CredentialID: fp,
		Header:       w.req.Header,
		Endpoint:     w.req.Endpoint,
		Body:         w.req.Body,
		Model:        w.info.Model,
		Pool:         poolID(poolKeyOf(w.prov.Name(), fp, w.info.Model, w.poolKey())),
		Client:       w.req.Client,
		Budget:       w.budget,
		AcceptedAt:   w.arrived,
		Deadline:     w.deadline,
		State:        w.addState(),
	})
	if err != nil {
		return fmt.Errorf("dispatch: storing request: %w: %w", llmfleet.ErrStore, err)
	}
	return nil
}

func (j *storeJournal) markSealed(fp string) {
	j.mu.Lock()
	j.sealed[fp] = true
	j.mu.Unlock()
}

func (j *storeJournal) intent(ctx context.Context, b *llmfleet.StoredBatch, ws []*waiter) error {
	ids := make(map[string]string, len(ws))
	for _, w := range ws {
		ids[w.id] = w.customID
	}
	if err := j.store.RecordIntent(ctx, b, ids); err != nil {
		return fmt.Errorf("dispatch: storing batch intent: %w: %w", llmfleet.ErrStore, err)
	}
	return nil
}

func (j *storeJournal) created(ctx context.Context, localID string, b *llmfleet.Batch) error {
	return j.store.RecordCreated(ctx, localID, b.ID, b.CreatedAt)
}

func (j *storeJournal) requeue(ctx context.Context, localID string) error {
	return j.store.RecordCreateFailed(ctx, localID, true)
}

func (j *storeJournal) failed(ctx context.Context, localID string) error {
	return j.store.RecordCreateFailed(ctx, localID, false)
}

func (j *storeJournal) ended(ctx context.Context, localID string, at time.Time) error {
	return j.store.RecordEnded(ctx, localID, at)
}

func (j *storeJournal) complete(ctx context.Context, done []llmfleet.Completion) ([]bool, error) {
	return j.store.CompleteRequests(ctx, done)
}

func (j *storeJournal) resolve(ctx context.Context, localID string) error {
	return j.store.ResolveBatch(ctx, localID)
}

func (j *storeJournal) ledger(ctx context.Context, entries []llmfleet.LedgerEntry) error {
	return j.store.AddLedger(ctx, entries)
}

func (j *storeJournal) turnarounds(ctx context.Context, samples []llmfleet.TurnaroundSample) error {
	return j.store.AddTurnarounds(ctx, samples)
}
