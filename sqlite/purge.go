package sqlite

import (
	"context"
	"database/sql"

	"github.com/llmfleet/llmfleet"
)

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
