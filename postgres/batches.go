package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/storecodec"
)

// RecordIntent records a batch about to be created (state intent, Size
// the number of its requests) and moves its requests to submitted with
// their custom_ids, in one transaction; an unknown or not queued request
// fails it, recording nothing.
func (d *DB) RecordIntent(ctx context.Context, b *llmfleet.StoredBatch, customIDs map[string]string) error {
	if b == nil || b.ID == "" {
		return errors.New("postgres: batch without an id")
	}
	if len(customIDs) == 0 {
		return fmt.Errorf("postgres: batch %s has no requests", b.ID)
	}
	return d.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO batches (id, provider, credential_id, state, size,
			intent_at, create_deadline) VALUES ($1, $2, $3, 'intent', $4, $5, $6)`,
			b.ID, b.Provider, b.CredentialID, len(customIDs), storecodec.Nanos(b.IntentAt), storecodec.Nanos(b.CreateDeadline))
		if err != nil {
			return fmt.Errorf("postgres: recording batch %s: %w", b.ID, err)
		}
		ids, customs := make([]string, 0, len(customIDs)), make([]string, 0, len(customIDs))
		for id, custom := range customIDs {
			ids, customs = append(ids, id), append(customs, custom)
		}
		// One statement for the whole batch: a round trip per request
		// would bound a flush of thousands by the network's latency.
		n, err := affected(tx.ExecContext(ctx, `UPDATE requests r SET state = 'submitted', batch_id = $1, custom_id = c.custom
			FROM unnest($2::text[], $3::text[]) AS c(id, custom) WHERE r.id = c.id AND r.state = 'queued'`, b.ID, ids, customs))
		if err != nil {
			return fmt.Errorf("postgres: batch %s requests: %w", b.ID, err)
		}
		if int(n) != len(ids) {
			// Name the first request not queued, or unknown.
			for _, id := range ids {
				var batch string
				err := tx.QueryRowContext(ctx, `SELECT coalesce(batch_id, '') FROM requests WHERE id = $1`, id).Scan(&batch)
				switch {
				case errors.Is(err, sql.ErrNoRows):
					return fmt.Errorf("postgres: batch %s: request %s: %w", b.ID, id, llmfleet.ErrNotFound)
				case err != nil:
					return err
				case batch != b.ID:
					return fmt.Errorf("postgres: batch %s: request %s is not queued", b.ID, id)
				}
			}
			return fmt.Errorf("postgres: batch %s: %d of %d requests were queued", b.ID, n, len(ids))
		}
		return nil
	})
}

// RecordCreated records the provider's id of a batch (state created).
func (d *DB) RecordCreated(ctx context.Context, batchID, upstreamID string, createdAt time.Time) error {
	return d.updateBatch(ctx, batchID, `UPDATE batches SET state = 'created', upstream_id = $1, created_at = $2 WHERE id = $3`,
		upstreamID, storecodec.Nanos(createdAt), batchID)
}

// RecordEnded records when the provider ended a batch; it stays created
// until ResolveBatch.
func (d *DB) RecordEnded(ctx context.Context, batchID string, endedAt time.Time) error {
	return d.updateBatch(ctx, batchID, `UPDATE batches SET ended_at = $1 WHERE id = $2`, storecodec.Nanos(endedAt), batchID)
}

// ResolveBatch marks a batch resolved.
func (d *DB) ResolveBatch(ctx context.Context, batchID string) error {
	return d.updateBatch(ctx, batchID, `UPDATE batches SET state = 'resolved' WHERE id = $1`, batchID)
}

// RecordCreateFailed marks a batch failed and, with requeue, puts its
// submitted requests back in the queue without batch or custom_id.
func (d *DB) RecordCreateFailed(ctx context.Context, batchID string, requeue bool) error {
	return d.write(ctx, func(tx *sql.Tx) error {
		q := `UPDATE batches SET state = 'failed' WHERE id = $1`
		if requeue {
			// Only an intent: a batch another process found by its tag
			// and recorded created must not be sent again.
			q += ` AND state = 'intent'`
		}
		n, err := affected(tx.ExecContext(ctx, q, batchID))
		if err != nil {
			return fmt.Errorf("postgres: batch %s: %w", batchID, err)
		}
		if n == 0 {
			var one int
			if err := tx.QueryRowContext(ctx, `SELECT 1 FROM batches WHERE id = $1`, batchID).Scan(&one); err != nil {
				return fmt.Errorf("postgres: batch %s: %w", batchID, llmfleet.ErrNotFound)
			}
			return fmt.Errorf("postgres: batch %s: %w", batchID, llmfleet.ErrStale)
		}
		if !requeue {
			return nil
		}
		_, err = tx.ExecContext(ctx, `UPDATE requests SET state = 'queued', batch_id = NULL, custom_id = NULL, owner = $2
			WHERE batch_id = $1 AND state = 'submitted'`, batchID, d.run())
		return err
	})
}

// updateBatch runs an update of one batch; none updated is ErrNotFound.
func (d *DB) updateBatch(ctx context.Context, batchID, query string, args ...any) error {
	return d.write(ctx, func(tx *sql.Tx) error {
		n, err := affected(tx.ExecContext(ctx, query, args...))
		if err != nil {
			return fmt.Errorf("postgres: batch %s: %w", batchID, err)
		}
		if n == 0 {
			return fmt.Errorf("postgres: batch %s: %w", batchID, llmfleet.ErrNotFound)
		}
		return nil
	})
}

// Pending returns the queued requests, oldest first, and the batches in
// state intent or created, oldest intent first, each with its requests
// still submitted, read in one repeatable-read snapshot.
func (d *DB) Pending(ctx context.Context) (queued []*llmfleet.StoredRequest, batches []*llmfleet.PendingBatch, err error) {
	db, err := d.conn()
	if err != nil {
		return nil, nil, err
	}
	tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	if err != nil {
		return nil, nil, err
	}
	defer tx.Rollback()
	queued, err = storecodec.QueryRequests(ctx, tx, `SELECT `+storecodec.RequestColumns+` FROM requests
		WHERE state = 'queued' OR (state = 'submitted' AND batch_id IS NULL) ORDER BY accepted_at, id COLLATE "C"`)
	if err != nil {
		return nil, nil, err
	}
	batches, err = storecodec.QueryBatches(ctx, tx, `SELECT `+storecodec.BatchColumns+` FROM batches
		WHERE state IN ('intent', 'created') ORDER BY intent_at, id COLLATE "C"`)
	if err != nil {
		return nil, nil, err
	}
	for _, pb := range batches {
		pb.Requests, err = storecodec.QueryRequests(ctx, tx, `SELECT `+storecodec.RequestColumns+` FROM requests
			WHERE batch_id = $1 AND state = 'submitted' ORDER BY accepted_at, id COLLATE "C"`, pb.Batch.ID)
		if err != nil {
			return nil, nil, err
		}
	}
	return queued, batches, nil
}
