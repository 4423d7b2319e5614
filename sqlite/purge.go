package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/llmfleet/llmfleet"
)

// purgePrefixes deletes the prefixes last seen before a time, or not
// known to have been seen (the zero time is before any), from the
// prefixes_seen index.
const purgePrefixes = `DELETE FROM prefixes WHERE seen_at IS NULL OR seen_at < ?`

// Purge deletes, in one transaction, the done requests (with their
// results) completed before resultsBefore, the resolved or failed batches
// that ended (or were created, or intended) before it and hold no request
// any more, the prefixes last seen before it (or not known to have been
// seen), and the ledger entries, turnaround samples and batch owners older
// than ledgerBefore. Queued and submitted requests and pending batches are
// never purged. It returns how many rows it deleted.
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
			{purgePrefixes, cut},
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
		n, err := purgeBlocks(ctx, tx, ledgerCut)
		if err != nil {
			return fmt.Errorf("sqlite: purge: %w", err)
		}
		total += n
		return nil
	})
	if err != nil {
		return 0, err
	}
	return int(total), nil
}

// purgeBlocks deletes the ledger entries older than cut from the ledger
// blocks: the blocks all of whose entries are older go, and the few that
// straddle cut are written again with their newer entries. It returns how
// many entries it deleted.
func purgeBlocks(ctx context.Context, tx *sql.Tx, cut int64) (int64, error) {
	var total int64
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(sum(entries), 0) FROM ledger_blocks WHERE last_time < ?`, cut).Scan(&total); err != nil {
		return 0, err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM ledger_blocks WHERE last_time < ?`, cut); err != nil {
		return 0, err
	}
	rows, err := tx.QueryContext(ctx, `SELECT seq, entries, data FROM ledger_blocks WHERE first_time < ?`, cut)
	if err != nil {
		return 0, err
	}
	type block struct {
		seq, n int64
		keep   []llmfleet.LedgerEntry
	}
	var straddling []block
	for rows.Next() {
		var b block
		var data []byte
		if err := rows.Scan(&b.seq, &b.n, &data); err != nil {
			rows.Close()
			return 0, err
		}
		err := decodeBlock(data, func(e llmfleet.LedgerEntry) {
			if e.Time.UnixNano() >= cut {
				b.keep = append(b.keep, e)
			}
		})
		if err != nil {
			rows.Close()
			return 0, err
		}
		straddling = append(straddling, b)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	for _, b := range straddling {
		total += b.n - int64(len(b.keep))
		// Written again in place, under its seq, so that its entries keep
		// their order among those of other blocks.
		first := b.keep[0].Time.UnixNano() // kept: last_time >= cut
		for _, e := range b.keep[1:] {
			first = min(first, e.Time.UnixNano())
		}
		if _, err := tx.ExecContext(ctx, `UPDATE ledger_blocks SET first_time = ?, entries = ?, data = ? WHERE seq = ?`,
			first, len(b.keep), appendBlock(nil, b.keep), b.seq); err != nil {
			return 0, err
		}
	}
	return total, nil
}
