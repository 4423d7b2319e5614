package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/llmfleet/llmfleet"
)

// insertLedger inserts one ledger entry; addEntry gives its arguments.
const insertLedger = `INSERT INTO ledger (time, request_id, provider, model, route,
	outcome, usage, cost_usd, other_route_usd, priced, queued, turnaround, latency, budget, budget_met, batch_id, rescue, client)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

// ledgerColumns is the number of values of one ledger entry, ledgerRows
// the number of entries AddLedger inserts with one statement.
const (
	ledgerColumns = 18
	ledgerRows    = 64
)

// insertLedgerRows inserts ledgerRows entries; appendEntry gives their
// arguments.
var insertLedgerRows = insertLedger + strings.Repeat(", (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", ledgerRows-1)

// addEntry inserts e with stmt, a prepared insertLedger.
func addEntry(ctx context.Context, stmt *sql.Stmt, e *llmfleet.LedgerEntry) error {
	args, err := appendEntry(make([]any, 0, ledgerColumns), e)
	if err != nil {
		return err
	}
	if _, err := stmt.ExecContext(ctx, args...); err != nil {
		return fmt.Errorf("sqlite: ledger: %w", err)
	}
	return nil
}

// appendEntry appends the values of e's columns, in insertLedger's order.
func appendEntry(args []any, e *llmfleet.LedgerEntry) ([]any, error) {
	u, err := encodeUsage(e.Usage)
	if err != nil {
		return args, err
	}
	return append(args, e.Time.UnixNano(), e.RequestID, e.Provider, e.Model, string(e.Route),
		e.Outcome, u, e.CostUSD, e.OtherRouteUSD, e.Priced, int64(e.Queued), int64(e.Turnaround),
		int64(e.Latency), int64(e.Budget), e.BudgetMet, e.BatchID, string(e.Rescue), e.Client), nil
}

// AddLedger records ledger entries, in one transaction: in statements of
// ledgerRows entries each, then one statement per entry left over.
func (d *DB) AddLedger(ctx context.Context, entries []llmfleet.LedgerEntry) error {
	if len(entries) == 0 {
		return nil
	}
	return d.write(ctx, func(tx *sql.Tx) error {
		if len(entries) >= ledgerRows {
			many, err := tx.PrepareContext(ctx, insertLedgerRows)
			if err != nil {
				return err
			}
			defer many.Close()
			args := make([]any, 0, ledgerRows*ledgerColumns)
			for len(entries) >= ledgerRows {
				args = args[:0]
				for i := range entries[:ledgerRows] {
					if args, err = appendEntry(args, &entries[i]); err != nil {
						return err
					}
				}
				if _, err := many.ExecContext(ctx, args...); err != nil {
					return fmt.Errorf("sqlite: ledger: %w", err)
				}
				entries = entries[ledgerRows:]
			}
		}
		if len(entries) == 0 {
			return nil
		}
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
