package sqlstore

import (
	"context"
	"database/sql"
	"errors"
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
func (s Store) RecordIntent(ctx context.Context, b *llmfleet.StoredBatch, customIDs map[string]string) error {
	if b == nil || b.ID == "" {
		return s.c.errorf("batch without an id")
	}
	if len(customIDs) == 0 {
		return s.c.errorf("batch %s has no requests", b.ID)
	}
	return s.c.Write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, s.c.sql(`INSERT INTO batches (id, provider, credential_id, state, size,
			intent_at, create_deadline) VALUES (?, ?, ?, 'intent', ?, ?, ?)`),
			b.ID, b.Provider, b.CredentialID, len(customIDs), storecodec.Nanos(b.IntentAt), storecodec.Nanos(b.CreateDeadline))
		if err != nil {
			return s.c.errorf("recording batch %s: %w", b.ID, err)
		}
		ids, customs := make([]string, 0, len(customIDs)), make([]string, 0, len(customIDs))
		for id, custom := range customIDs {
			ids, customs = append(ids, id), append(customs, custom)
		}
		n, err := s.c.d.Submit(ctx, tx, b.ID, ids, customs)
		if err != nil {
			return s.c.errorf("batch %s requests: %w", b.ID, err)
		}
		if int(n) != len(ids) {
			return s.notSubmitted(ctx, tx, b.ID, ids, n)
		}
		return nil
	})
}

// notSubmitted returns the error of a RecordIntent that moved n of its
// requests only: it names the first request not queued, or unknown.
func (s Store) notSubmitted(ctx context.Context, tx *sql.Tx, batchID string, ids []string, n int64) error {
	for _, id := range ids {
		var batch string
		err := tx.QueryRowContext(ctx, s.c.sql(`SELECT coalesce(batch_id, '') FROM requests WHERE id = ?`), id).Scan(&batch)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return s.c.errorf("batch %s: request %s: %w", batchID, id, llmfleet.ErrNotFound)
		case err != nil:
			return err
		case batch != batchID:
			return s.c.errorf("batch %s: request %s is not queued", batchID, id)
		}
	}
	return s.c.errorf("batch %s: %d of %d requests were queued", batchID, n, len(ids))
}

// RecordCreated records the provider's id for a batch (State created).
func (s Store) RecordCreated(ctx context.Context, batchID, upstreamID string, createdAt time.Time) error {
	return s.updateBatch(ctx, batchID, `UPDATE batches SET state = 'created', upstream_id = ?, created_at = ? WHERE id = ?`,
		upstreamID, storecodec.Nanos(createdAt), batchID)
}

// RecordEnded records that the provider reported the batch ended. The
// batch stays in state created until ResolveBatch.
func (s Store) RecordEnded(ctx context.Context, batchID string, endedAt time.Time) error {
	return s.updateBatch(ctx, batchID, `UPDATE batches SET ended_at = ? WHERE id = ?`, storecodec.Nanos(endedAt), batchID)
}

// ResolveBatch marks a batch resolved.
func (s Store) ResolveBatch(ctx context.Context, batchID string) error {
	return s.updateBatch(ctx, batchID, `UPDATE batches SET state = 'resolved' WHERE id = ?`, batchID)
}

// updateBatch runs one UPDATE of a batch by id; no row is ErrNotFound.
func (s Store) updateBatch(ctx context.Context, batchID, query string, args ...any) error {
	return s.c.Write(ctx, func(tx *sql.Tx) error {
		n, err := affected(tx.ExecContext(ctx, s.c.sql(query), args...))
		if err != nil {
			return s.c.errorf("batch %s: %w", batchID, err)
		}
		if n == 0 {
			return s.c.errorf("batch %s: %w", batchID, llmfleet.ErrNotFound)
		}
		return nil
	})
}

// RecordCreateFailed marks a batch failed. With requeue its requests that
// are still submitted go back to the queue, without batch and custom_id
// (and, on a store with owners, owned by this run: Dialect.Owner); a
// batch that is no intent any more (recorded created, by another process
// that found it by its tag) is left as it is, with an error wrapping
// llmfleet.ErrStale. Without requeue, they stay submitted for the caller
// to complete.
func (s Store) RecordCreateFailed(ctx context.Context, batchID string, requeue bool) error {
	return s.c.Write(ctx, func(tx *sql.Tx) error {
		q := `UPDATE batches SET state = 'failed' WHERE id = ?`
		if requeue {
			// Only an intent: a batch another process found by its tag
			// and recorded created must not be sent again.
			q += ` AND state = 'intent'`
		}
		n, err := affected(tx.ExecContext(ctx, s.c.sql(q), batchID))
		if err != nil {
			return s.c.errorf("batch %s: %w", batchID, err)
		}
		if n == 0 {
			var one int
			if err := tx.QueryRowContext(ctx, s.c.sql(`SELECT 1 FROM batches WHERE id = ?`), batchID).Scan(&one); err != nil {
				return s.c.errorf("batch %s: %w", batchID, llmfleet.ErrNotFound)
			}
			return s.c.errorf("batch %s: %w", batchID, llmfleet.ErrStale)
		}
		if !requeue {
			return nil
		}
		set, args := ``, []any(nil)
		if s.c.d.Owner != nil {
			set, args = `, owner = ?`, append(args, s.c.d.Owner())
		}
		_, err = tx.ExecContext(ctx, s.c.sql(`UPDATE requests SET state = 'queued', batch_id = NULL, custom_id = NULL`+set+`
			WHERE batch_id = ? AND state = 'submitted'`), append(args, batchID)...)
		return err
	})
}

// Pending returns what a restart must pick up, as of one snapshot: the
// queued requests and those submitted without a batch (sent sync by the
// process that accepted them), oldest first, and the batches in state
// intent or created, oldest intent first, each with its requests still
// submitted.
func (s Store) Pending(ctx context.Context) (queued []*llmfleet.StoredRequest, batches []*llmfleet.PendingBatch, err error) {
	db, err := s.c.Reader()
	if err != nil {
		return nil, nil, err
	}
	tx, err := db.BeginTx(ctx, s.c.d.Snapshot)
	if err != nil {
		return nil, nil, err
	}
	defer tx.Rollback()
	byAge := ` ORDER BY accepted_at, ` + s.c.byteOrder("id")
	queued, err = storecodec.QueryRequests(ctx, tx, `SELECT `+storecodec.RequestColumns+` FROM requests
		WHERE state = 'queued' OR (state = 'submitted' AND batch_id IS NULL)`+byAge)
	if err != nil {
		return nil, nil, err
	}
	batches, err = storecodec.QueryBatches(ctx, tx, `SELECT `+storecodec.BatchColumns+` FROM batches
		WHERE state IN ('intent', 'created') ORDER BY intent_at, `+s.c.byteOrder("id"))
	if err != nil {
		return nil, nil, err
	}
	for _, pb := range batches {
		pb.Requests, err = storecodec.QueryRequests(ctx, tx, s.c.sql(`SELECT `+storecodec.RequestColumns+` FROM requests
			WHERE batch_id = ? AND state = 'submitted'`+byAge), pb.Batch.ID)
		if err != nil {
			return nil, nil, err
		}
		if err := ReadAnswered(ctx, s.c, tx, pb); err != nil {
			return nil, nil, err
		}
	}
	return queued, batches, nil
}

// ReadAnswered sets pb.Answered, read within q (Pending's transaction, or
// a store's adoption) in c's dialect: the requests of a batch in flight
// answered meanwhile by another route (a rescue), whose results the batch
// bills all the same, oldest first. Those of an intent too: its create
// may have landed, and only a look for it tells (an intent whose
// requests were all answered is reconciled, not concluded failed).
func ReadAnswered(ctx context.Context, c *Conn, q storecodec.Querier, pb *llmfleet.PendingBatch) error {
	where, args := `batch_id = ? AND state = 'done'`, []any{pb.Batch.ID}
	switch pb.Batch.State {
	case llmfleet.BatchCreated: // (not one the batch answered itself)
		where, args = where+` AND COALESCE(result_batch_id, '') <> ?`, append(args, pb.Batch.UpstreamID)
	case llmfleet.BatchIntent:
	default:
		return nil
	}
	var err error
	pb.Answered, err = storecodec.QueryRequests(ctx, q, c.sql(`SELECT `+storecodec.RequestColumns+` FROM requests
		WHERE `+where+` ORDER BY accepted_at, `+c.byteOrder("id")), args...)
	return err
}
