package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/llmfleet/llmfleet"
)

// Ledger returns the entries whose Time is in [from, to), in the order
// of their times, then the order they were added.
func (d *DB) Ledger(ctx context.Context, from, to time.Time) ([]llmfleet.LedgerEntry, error) {
	db, err := d.conn.Reader()
	if err != nil {
		return nil, err
	}
	rows, err := db.QueryContext(ctx, `SELECT entry FROM ledger WHERE time >= $1 AND time < $2 ORDER BY time, seq`,
		from.UnixNano(), to.UnixNano())
	if err != nil {
		return nil, fmt.Errorf("postgres: ledger: %w", err)
	}
	defer rows.Close()
	var out []llmfleet.LedgerEntry
	for rows.Next() {
		var b []byte
		if err := rows.Scan(&b); err != nil {
			return nil, err
		}
		var e llmfleet.LedgerEntry
		if err := json.Unmarshal(b, &e); err != nil {
			return nil, fmt.Errorf("postgres: ledger entry: %w", err)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// Turnarounds returns, per provider and model (in byte order), the
// latest n samples, oldest first.
func (d *DB) Turnarounds(ctx context.Context, n int) ([]llmfleet.TurnaroundSample, error) {
	db, err := d.conn.Reader()
	if err != nil {
		return nil, err
	}
	if n <= 0 {
		return nil, nil
	}
	rows, err := db.QueryContext(ctx, `SELECT provider, model, size, turnaround, at FROM (
			SELECT *, row_number() OVER (PARTITION BY provider, model ORDER BY at DESC, seq DESC) AS r FROM turnarounds
		) t WHERE r <= $1 ORDER BY provider COLLATE "C", model COLLATE "C", at, seq`, n)
	if err != nil {
		return nil, fmt.Errorf("postgres: turnarounds: %w", err)
	}
	defer rows.Close()
	var out []llmfleet.TurnaroundSample
	for rows.Next() {
		var s llmfleet.TurnaroundSample
		var turnaround, at int64
		if err := rows.Scan(&s.Provider, &s.Model, &s.Size, &turnaround, &at); err != nil {
			return nil, err
		}
		s.Turnaround, s.At = time.Duration(turnaround), time.Unix(0, at).UTC()
		out = append(out, s)
	}
	return out, rows.Err()
}
