package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/llmfleet/llmfleet"
)

// insertLedger inserts one ledger entry; addEntry gives its arguments.
const insertLedger = `INSERT INTO ledger (time, request_id, provider, model, route,
	outcome, usage, cost_usd, other_route_usd, priced, queued, turnaround, latency, budget, budget_met, batch_id, rescue, client)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

// addEntry inserts e with stmt, a prepared insertLedger.
func addEntry(ctx context.Context, stmt *sql.Stmt, e *llmfleet.LedgerEntry) error {
	u, err := encodeUsage(e.Usage)
	if err != nil {
		return err
	}
	_, err = stmt.ExecContext(ctx, e.Time.UnixNano(), e.RequestID, e.Provider, e.Model, string(e.Route),
		e.Outcome, u, e.CostUSD, e.OtherRouteUSD, e.Priced, int64(e.Queued), int64(e.Turnaround),
		int64(e.Latency), int64(e.Budget), e.BudgetMet, e.BatchID, string(e.Rescue), e.Client)
	if err != nil {
		return fmt.Errorf("sqlite: ledger: %w", err)
	}
	return nil
}

// AddLedger records ledger entries, in one transaction.
func (d *DB) AddLedger(ctx context.Context, entries []llmfleet.LedgerEntry) error {
	if len(entries) == 0 {
		return nil
	}
	return d.write(ctx, func(tx *sql.Tx) error {
		stmt, err := tx.PrepareContext(ctx, insertLedger)
		if err != nil {
			return err
		}
		defer stmt.Close()
		for i := range entries {
			if err := addEntry(ctx, stmt, &entries[i]); err != nil {
				return err
			}
		}
		return nil
	})
}

// Ledger returns the ledger entries whose Time is in [from, to), in time
// order, then in the order they were added.
func (d *DB) Ledger(ctx context.Context, from, to time.Time) ([]llmfleet.LedgerEntry, error) {
	if d.r == nil {
		return nil, ErrClosed
	}
	rows, err := d.r.QueryContext(ctx, `SELECT time, request_id, provider, model, route, outcome, usage,
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
		if e.Usage, err = decodeUsage(usage); err != nil {
			return nil, fmt.Errorf("sqlite: ledger usage: %w", err)
		}
		e.Time, e.Route, e.Rescue = time.Unix(0, t).UTC(), llmfleet.Route(route), llmfleet.Rescue(rescue)
		e.Queued, e.Turnaround, e.Latency, e.Budget = time.Duration(queued), time.Duration(turnaround),
			time.Duration(latency), time.Duration(budget)
		out = append(out, e)
	}
	return out, rows.Err()
}
