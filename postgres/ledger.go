package postgres

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/llmfleet/llmfleet"
)

// AddLedger records ledger entries, as given.
func (d *DB) AddLedger(ctx context.Context, entries []llmfleet.LedgerEntry) error {
	if len(entries) == 0 {
		return nil
	}
	return d.write(ctx, func(tx *sql.Tx) error { return addLedger(ctx, tx, entries) })
}

// addLedger inserts entries, one row each, the entry as JSON.
func addLedger(ctx context.Context, tx *sql.Tx, entries []llmfleet.LedgerEntry) error {
	for _, e := range entries {
		b, err := json.Marshal(e)
		if err != nil {
			return fmt.Errorf("postgres: ledger entry: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO ledger (time, entry) VALUES ($1, $2)`, e.Time.UnixNano(), b); err != nil {
			return fmt.Errorf("postgres: ledger entry: %w", err)
		}
	}
	return nil
}

// Ledger returns the entries whose Time is in [from, to), in the order
// of their times, then the order they were added.
func (d *DB) Ledger(ctx context.Context, from, to time.Time) ([]llmfleet.LedgerEntry, error) {
	db, err := d.conn()
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

// AddTurnarounds records observed batch turnarounds, one row each.
func (d *DB) AddTurnarounds(ctx context.Context, samples []llmfleet.TurnaroundSample) error {
	if len(samples) == 0 {
		return nil
	}
	return d.write(ctx, func(tx *sql.Tx) error {
		for _, s := range samples {
			if _, err := tx.ExecContext(ctx, `INSERT INTO turnarounds (provider, model, size, turnaround, at)
				VALUES ($1, $2, $3, $4, $5)`, s.Provider, s.Model, s.Size, int64(s.Turnaround), s.At.UnixNano()); err != nil {
				return fmt.Errorf("postgres: turnaround: %w", err)
			}
		}
		return nil
	})
}

// Turnarounds returns, per provider and model (in byte order), the
// latest n samples, oldest first.
func (d *DB) Turnarounds(ctx context.Context, n int) ([]llmfleet.TurnaroundSample, error) {
	db, err := d.conn()
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

// Purge deletes the done requests and the resolved or failed batches
// older than resultsBefore (a batch once none of its requests is left)
// and the prefixes last seen before it, and the ledger entries,
// turnaround samples and batch owners older than ledgerBefore; it returns
// how many rows it deleted.
func (d *DB) Purge(ctx context.Context, resultsBefore, ledgerBefore time.Time) (int, error) {
	cut, ledgerCut := resultsBefore.UnixNano(), ledgerBefore.UnixNano()
	var total int64
	err := d.write(ctx, func(tx *sql.Tx) error {
		total = 0
		for _, q := range []struct {
			sql string
			cut int64
		}{
			{`DELETE FROM requests WHERE state = 'done' AND coalesce(completed_at, accepted_at, 0) < $1`, cut},
			{`DELETE FROM batches WHERE state IN ('resolved', 'failed')
				AND coalesce(ended_at, created_at, intent_at, 0) < $1
				AND NOT EXISTS (SELECT 1 FROM requests WHERE requests.batch_id = batches.id)`, cut},
			{purgePrefixes, cut},
			{`DELETE FROM ledger WHERE time < $1`, ledgerCut},
			{`DELETE FROM turnarounds WHERE at < $1`, ledgerCut},
			{`DELETE FROM batch_owners WHERE at < $1`, ledgerCut},
		} {
			n, err := affected(tx.ExecContext(ctx, q.sql, q.cut))
			if err != nil {
				return fmt.Errorf("postgres: purge: %w", err)
			}
			total += n
		}
		return nil
	})
	return int(total), err
}
