package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/storecodec"
)

// insertBlock inserts one block of ledger entries (ledgerblock.go).
const insertBlock = `INSERT INTO ledger_blocks (first_time, last_time, entries, data) VALUES (?, ?, ?, ?)`

// addBlock writes entries as one block, within tx.
func addBlock(ctx context.Context, tx *sql.Tx, entries []llmfleet.LedgerEntry) error {
	if len(entries) == 0 {
		return nil
	}
	first, last := entries[0].Time.UnixNano(), entries[0].Time.UnixNano()
	for i := range entries[1:] {
		t := entries[i+1].Time.UnixNano()
		first, last = min(first, t), max(last, t)
	}
	data := appendBlock(make([]byte, 0, 128*len(entries)), entries)
	_, err := tx.ExecContext(ctx, insertBlock, first, last, len(entries), data)
	return err
}

// Ledger returns the ledger entries whose Time is in [from, to), in time
// order, then in the order they were added.
func (d *DB) Ledger(ctx context.Context, from, to time.Time) ([]llmfleet.LedgerEntry, error) {
	db, err := d.conn.Reader()
	if err != nil {
		return nil, err
	}
	rows, err := db.QueryContext(ctx, `SELECT time, request_id, provider, model, route, outcome, usage,
		cost_usd, other_route_usd, priced, queued, turnaround, latency, budget, budget_met, batch_id, rescue, client
		FROM ledger WHERE time >= ? AND time < ? ORDER BY time, seq`, from.UnixNano(), to.UnixNano())
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []llmfleet.LedgerEntry
	for rows.Next() {
		var (
			e                                      llmfleet.LedgerEntry
			t, queued, turnaround, latency, budget int64
			route, rescue                          string
			usage                                  []byte
		)
		if err := rows.Scan(&t, &e.RequestID, &e.Provider, &e.Model, &route, &e.Outcome, &usage,
			&e.CostUSD, &e.OtherRouteUSD, &e.Priced, &queued, &turnaround, &latency, &budget, &e.BudgetMet, &e.BatchID, &rescue, &e.Client); err != nil {
			return nil, err
		}
		if e.Usage, err = storecodec.DecodeUsage(usage); err != nil {
			return nil, fmt.Errorf("sqlite: ledger usage: %w", err)
		}
		e.Time, e.Route, e.Rescue = time.Unix(0, t).UTC(), llmfleet.Route(route), llmfleet.Rescue(rescue)
		e.Queued, e.Turnaround, e.Latency, e.Budget = time.Duration(queued), time.Duration(turnaround),
			time.Duration(latency), time.Duration(budget)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows.Close()
	return blockEntries(ctx, db, out, from.UnixNano(), to.UnixNano())
}

// blockEntries appends to out (the entries of the ledger table, in time
// order) those of the blocks whose Time is in [from, to) and sorts them
// all by time, stably: entries of one time keep the order they were
// added in (the table's first, then the blocks' by seq, then their order
// within a block).
func blockEntries(ctx context.Context, db *sql.DB, out []llmfleet.LedgerEntry, from, to int64) ([]llmfleet.LedgerEntry, error) {
	rows, err := db.QueryContext(ctx, `SELECT data FROM ledger_blocks
		WHERE last_time >= ? AND first_time < ? ORDER BY seq`, from, to)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	legacy := len(out)
	for rows.Next() {
		var data []byte
		if err := rows.Scan(&data); err != nil {
			return nil, err
		}
		err := decodeBlock(data, func(e llmfleet.LedgerEntry) {
			if t := e.Time.UnixNano(); t >= from && t < to {
				out = append(out, e)
			}
		})
		if err != nil {
			return nil, err
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(out) > legacy {
		slices.SortStableFunc(out, func(a, b llmfleet.LedgerEntry) int { return a.Time.Compare(b.Time) })
	}
	return out, nil
}
