package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/llmfleet/llmfleet"
)

// The queries of Turnarounds, each answered from the turnarounds_latest
// index alone (see TestTurnaroundsPlan): the first provider and model, the
// one after a given one, and one's latest samples, latest first.
const (
	firstTurnaroundKey = `SELECT provider, model FROM turnarounds ORDER BY provider, model LIMIT 1`
	nextTurnaroundKey  = `SELECT provider, model FROM turnarounds
		WHERE (provider, model) > (?, ?) ORDER BY provider, model LIMIT 1`
	latestTurnarounds = `SELECT size, turnaround, at FROM turnarounds
		WHERE provider = ? AND model = ? ORDER BY at DESC, seq DESC LIMIT ?`
)

// Turnarounds returns, as of one snapshot, the latest n samples of each
// provider and model, oldest first, by provider, then model. It reads
// each provider and model's samples off the end of its range in the
// turnarounds_latest index and seeks from one range to the next, so its
// cost grows with the number of providers and models and with n, not with
// the number of samples kept.
func (d *DB) Turnarounds(ctx context.Context, n int) ([]llmfleet.TurnaroundSample, error) {
	db, err := d.conn.Reader()
	if err != nil {
		return nil, err
	}
	if n <= 0 {
		return nil, nil
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	next, err := tx.PrepareContext(ctx, nextTurnaroundKey)
	if err != nil {
		return nil, err
	}
	defer next.Close()
	latest, err := tx.PrepareContext(ctx, latestTurnarounds)
	if err != nil {
		return nil, err
	}
	defer latest.Close()

	var (
		out             []llmfleet.TurnaroundSample
		provider, model string
	)
	// The first provider and model, then each one's successor.
	row := tx.QueryRowContext(ctx, firstTurnaroundKey)
	for {
		err := row.Scan(&provider, &model)
		if errors.Is(err, sql.ErrNoRows) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		group, err := latestOf(ctx, latest, provider, model, n)
		if err != nil {
			return nil, err
		}
		out = append(out, group...)
		row = next.QueryRowContext(ctx, provider, model)
	}
}

// latestOf returns the latest n samples of a provider and model, oldest
// first; stmt is the prepared query that reads them latest first.
func latestOf(ctx context.Context, stmt *sql.Stmt, provider, model string, n int) ([]llmfleet.TurnaroundSample, error) {
	rows, err := stmt.QueryContext(ctx, provider, model, n)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []llmfleet.TurnaroundSample
	for rows.Next() {
		var turnaround, at int64
		s := llmfleet.TurnaroundSample{Provider: provider, Model: model}
		if err := rows.Scan(&s.Size, &turnaround, &at); err != nil {
			return nil, err
		}
		s.Turnaround, s.At = time.Duration(turnaround), time.Unix(0, at).UTC()
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, nil
}
