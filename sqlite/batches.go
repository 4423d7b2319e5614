package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/storecodec"
)

// RecordIntent records a batch about to be created (State intent, Size the
// number of its requests, with its IntentAt and CreateDeadline) and moves
// its requests, which must be queued, to submitted with their custom_ids,
// in one transaction. customIDs maps request id to custom_id. An unknown
// request fails the call with an error wrapping llmfleet.ErrNotFound, a
// request that is not queued with another error; nothing is recorded then.
func (d *DB) RecordIntent(ctx context.Context, b *llmfleet.StoredBatch, customIDs map[string]string) error {
	if b == nil || b.ID == "" {
		return errors.New("sqlite: batch without an id")
	}
	if len(customIDs) == 0 {
		return fmt.Errorf("sqlite: batch %s has no requests", b.ID)
	}
	return d.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO batches (id, provider, credential_id, state, size,
			intent_at, create_deadline) VALUES (?, ?, ?, 'intent', ?, ?, ?)`,
			b.ID, b.Provider, b.CredentialID, len(customIDs), storecodec.Nanos(b.IntentAt), storecodec.Nanos(b.CreateDeadline))
		if err != nil {
			return fmt.Errorf("sqlite: recording batch %s: %w", b.ID, err)
		}
		stmt, err := tx.PrepareContext(ctx, `UPDATE requests SET state = 'submitted', batch_id = ?, custom_id = ?
			WHERE id = ? AND state = 'queued'`)
		if err != nil {
			return err
		}
		defer stmt.Close()
		for id, custom := range customIDs {
			n, err := affected(stmt.ExecContext(ctx, b.ID, custom, id))
			if err != nil {
				return fmt.Errorf("sqlite: batch %s request %s: %w", b.ID, id, err)
			}
			if n == 0 {
				if err := mustExist(ctx, tx, "requests", id); err != nil {
					return err
				}
				return fmt.Errorf("sqlite: batch %s: request %s is not queued", b.ID, id)
			}
		}
		return nil
	})
}

// RecordCreated records the provider's id for a batch (State created).
func (d *DB) RecordCreated(ctx context.Context, batchID, upstreamID string, createdAt time.Time) error {
	return d.updateBatch(ctx, batchID, `UPDATE batches SET state = 'created', upstream_id = ?, created_at = ? WHERE id = ?`,
		upstreamID, storecodec.Nanos(createdAt), batchID)
}

// RecordEnded records that the provider reported the batch ended. The
// batch stays in state created until ResolveBatch.
func (d *DB) RecordEnded(ctx context.Context, batchID string, endedAt time.Time) error {
	return d.updateBatch(ctx, batchID, `UPDATE batches SET ended_at = ? WHERE id = ?`, storecodec.Nanos(endedAt), batchID)
}

// ResolveBatch marks a batch resolved.
func (d *DB) ResolveBatch(ctx context.Context, batchID string) error {
	return d.updateBatch(ctx, batchID, `UPDATE batches SET state = 'resolved' WHERE id = ?`, batchID)
}

// RecordCreateFailed marks a batch failed. With requeue its requests that
// are still submitted go back to the queue, without batch and custom_id;
// without, they stay submitted for the caller to complete.
func (d *DB) RecordCreateFailed(ctx context.Context, batchID string, requeue bool) error {
	return d.write(ctx, func(tx *sql.Tx) error {
		q := `UPDATE batches SET state = 'failed' WHERE id = ?`
		if requeue {
			// Only an intent: a batch another process found by its tag
			// and recorded created must not be sent again.
			q += ` AND state = 'intent'`
		}
		n, err := affected(tx.ExecContext(ctx, q, batchID))
		if err != nil {
			return fmt.Errorf("sqlite: batch %s: %w", batchID, err)
		}
		if n == 0 {
			var one int
			if err := tx.QueryRowContext(ctx, `SELECT 1 FROM batches WHERE id = ?`, batchID).Scan(&one); err != nil {
				return fmt.Errorf("sqlite: batch %s: %w", batchID, llmfleet.ErrNotFound)
			}
			return fmt.Errorf("sqlite: batch %s: %w", batchID, llmfleet.ErrStale)
		}
		if !requeue {
			return nil
		}
		_, err = tx.ExecContext(ctx, `UPDATE requests SET state = 'queued', batch_id = NULL, custom_id = NULL
			WHERE batch_id = ? AND state = 'submitted'`, batchID)
		return err
	})
}

// updateBatch runs one UPDATE of a batch by id; no row is ErrNotFound.
func (d *DB) updateBatch(ctx context.Context, batchID, query string, args ...any) error {
	return d.write(ctx, func(tx *sql.Tx) error {
		n, err := affected(tx.ExecContext(ctx, query, args...))
		if err != nil {
			return fmt.Errorf("sqlite: batch %s: %w", batchID, err)
		}
		if n == 0 {
			return fmt.Errorf("sqlite: batch %s: %w", batchID, llmfleet.ErrNotFound)
		}
		return nil
	})
}

// Pending returns what a restart must pick up, as of one snapshot: the
// queued requests and those submitted without a batch (sent sync by the
// process that accepted them), oldest first, and the batches in state
// intent or created, oldest intent first, each with its requests still
// submitted.
func (d *DB) Pending(ctx context.Context) (queued []*llmfleet.StoredRequest, batches []*llmfleet.PendingBatch, err error) {
	if d.r == nil {
		return nil, nil, ErrClosed
	}
	tx, err := d.r.BeginTx(ctx, nil)
	if err != nil {
		return nil, nil, err
	}
	defer tx.Rollback()
	queued, err = storecodec.QueryRequests(ctx, tx, `SELECT `+storecodec.RequestColumns+` FROM requests
		WHERE state = 'queued' OR (state = 'submitted' AND batch_id IS NULL) ORDER BY accepted_at, id`)
	if err != nil {
		return nil, nil, err
	}
	batches, err = storecodec.QueryBatches(ctx, tx, `SELECT `+storecodec.BatchColumns+` FROM batches
		WHERE state IN ('intent', 'created') ORDER BY intent_at, id`)
	if err != nil {
		return nil, nil, err
	}
	for _, pb := range batches {
		pb.Requests, err = storecodec.QueryRequests(ctx, tx, `SELECT `+storecodec.RequestColumns+` FROM requests
			WHERE batch_id = ? AND state = 'submitted' ORDER BY accepted_at, id`, pb.Batch.ID)
		if err != nil {
			return nil, nil, err
		}
	}
	return queued, batches, nil
}
