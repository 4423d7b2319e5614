package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Purge deletes, in one transaction, the done requests (with their
// results) completed before resultsBefore, the resolved or failed batches
// that ended (or were created, or intended) before it and hold no request
// any more, and the ledger entries, turnaround samples and batch owners
// older than ledgerBefore. Queued and submitted requests and pending
// batches are never purged. It returns how many rows it deleted.
//
// Turnaround samples go with the ledger, not with the results: a model
// used once a quarter still starts from what its last batches took, and a
// sample is never kept longer than the cost records of its batch.
func (d *DB) Purge(ctx context.Context, resultsBefore, ledgerBefore time.Time) (int, error) {
	cut, ledgerCut := resultsBefore.UnixNano(), ledgerBefore.UnixNano()
	total := int64(0)
	err := d.write(ctx, func(tx *sql.Tx) error {
		for _, q := range []struct {
			sql string
			cut int64
		}{
			{`DELETE FROM requests WHERE state = 'done' AND coalesce(completed_at, accepted_at, 0) < ?`, cut},
			{`DELETE FROM batches WHERE state IN ('resolved', 'failed')
				AND coalesce(ended_at, created_at, intent_at, 0) < ?
				AND NOT EXISTS (SELECT 1 FROM requests WHERE requests.batch_id = batches.id)`, cut},
			{`DELETE FROM ledger WHERE time < ?`, ledgerCut},
			{`DELETE FROM turnarounds WHERE at < ?`, ledgerCut},
			{`DELETE FROM batch_owners WHERE at < ?`, ledgerCut},
		} {
			n, err := affected(tx.ExecContext(ctx, q.sql, q.cut))
			if err != nil {
				return fmt.Errorf("sqlite: purge: %w", err)
			}
			total += n
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return int(total), nil
}
