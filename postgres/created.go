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

// RecordCreated records the provider's id for a batch in flight (State
// created) and makes the current run its owner, unless another live run
// owns it: one that adopted it while this process's create was under way
// (it paused past its lease), and tracks it. Then nothing is written and
// the error wraps llmfleet.ErrStale, so that one batch is tracked, and its
// results delivered, by one replica. A batch no longer in flight
// (resolved, or its create failed) is left as it is, with ErrStale too,
// as is any batch while the current run's own lease has ended (it is
// adopted from the ended run, by another replica or by this one's next).
func (d *DB) RecordCreated(ctx context.Context, batchID, upstreamID string, createdAt time.Time) error {
	token, mine := d.run.tokens()
	return d.conn.Write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE batches t SET state = 'created', upstream_id = $1, created_at = $2, owner = $4
			WHERE id = $3 AND state IN ('intent', 'created')
			AND EXISTS (SELECT 1 FROM replicas p WHERE p.id = $4 AND p.lease_until > clock_timestamp())
			AND (owner = ANY($5) OR NOT EXISTS (SELECT 1 FROM replicas p WHERE p.id = t.owner AND p.lease_until > clock_timestamp()))`,
			upstreamID, storecodec.Nanos(createdAt), batchID, token, mine)
		if err != nil {
			return fmt.Errorf("postgres: recording batch %s created: %w", batchID, err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 1 {
			return err
		}
		var one int
		switch err := tx.QueryRowContext(ctx, `SELECT 1 FROM batches WHERE id = $1`, batchID).Scan(&one); {
		case errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("postgres: batch %s: %w", batchID, llmfleet.ErrNotFound)
		case err != nil:
			return fmt.Errorf("postgres: batch %s: %w", batchID, err)
		}
		return fmt.Errorf("postgres: batch %s is another replica's, or no longer in flight: %w", batchID, llmfleet.ErrStale)
	})
}
