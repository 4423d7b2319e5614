package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/storecodec"
)

const insertRequest = `INSERT INTO requests (id, provider, credential_id, header, body,
	model, budget, accepted_at, deadline, state, client, endpoint) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
	ON CONFLICT (id) DO NOTHING`

// insertArgs returns the arguments of insertRequest for r.
func insertArgs(r *llmfleet.StoredRequest) ([]any, error) {
	if r.ID == "" {
		return nil, errors.New("sqlite: request without an id")
	}
	state := storecodec.AddedState(r)
	h, err := storecodec.EncodeHeader(r.Header)
	if err != nil {
		return nil, fmt.Errorf("sqlite: request %s header: %w", r.ID, err)
	}
	return []any{r.ID, r.Provider, r.CredentialID, h, storecodec.BytesOrEmpty(r.Body),
		r.Model, int64(r.Budget), storecodec.Nanos(r.AcceptedAt), storecodec.Nanos(r.Deadline), string(state), r.Client, r.Endpoint}, nil
}

// GetRequest returns one request, with its result if it has one, or an
// error wrapping llmfleet.ErrNotFound.
func (d *DB) GetRequest(ctx context.Context, id string) (*llmfleet.StoredRequest, error) {
	if d.r == nil {
		return nil, ErrClosed
	}
	row := d.r.QueryRowContext(ctx, `SELECT `+storecodec.RequestColumns+` FROM requests WHERE id = ?`, id)
	r, err := storecodec.ScanRequest(row)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("sqlite: request %s: %w", id, llmfleet.ErrNotFound)
	}
	return r, err
}

// CompleteRequests stores the results of requests (State done) and their
// ledger entries, in one transaction, in the order given. A request that
// is done already, by an earlier call or earlier in this one, keeps its
// first result and gets no ledger entry from this call. An unknown id, or
// a nil result, fails the whole call, storing nothing; the unknown id with
// an error wrapping llmfleet.ErrNotFound. A ledger entry is stored as
// given, its RequestID included.
func (d *DB) CompleteRequests(ctx context.Context, done []llmfleet.Completion) ([]bool, error) {
	if len(done) == 0 {
		return nil, nil
	}
	var kept []bool
	err := d.write(ctx, func(tx *sql.Tx) error {
		kept = make([]bool, len(done))
		stmt, err := tx.PrepareContext(ctx, `UPDATE requests SET state = 'done',
			status_code = ?, result_body = ?, result_error = ?, usage = ?, completed_at = ?, result_batch_id = ?
			WHERE id = ? AND state != 'done'`)
		if err != nil {
			return err
		}
		defer stmt.Close()
		var entries []llmfleet.LedgerEntry
		for i, c := range done {
			if c.Result == nil {
				return fmt.Errorf("sqlite: request %s: nil result", c.RequestID)
			}
			status, body, errJSON, err := storecodec.ResultColumns(c.Result)
			if err != nil {
				return fmt.Errorf("sqlite: request %s: %w", c.RequestID, err)
			}
			u, err := storecodec.EncodeUsage(c.Result.Usage)
			if err != nil {
				return err
			}
			n, err := affected(stmt.ExecContext(ctx, status, body, errJSON, u, storecodec.Nanos(c.Result.CompletedAt), c.Result.BatchID, c.RequestID))
			if err != nil {
				return fmt.Errorf("sqlite: completing request %s: %w", c.RequestID, err)
			}
			if n == 0 {
				if err := mustExist(ctx, tx, "requests", c.RequestID); err != nil {
					return err
				}
				continue // done already: its first result and entry stand
			}
			kept[i] = true
			if c.Ledger == nil {
				continue
			}
			entries = append(entries, *c.Ledger)
		}
		return addBlock(ctx, tx, entries)
	})
	if err != nil {
		return nil, err
	}
	return kept, nil
}

// mustExist returns an error wrapping llmfleet.ErrNotFound unless table
// has a row with id.
func mustExist(ctx context.Context, tx *sql.Tx, table, id string) error {
	var one int
	err := tx.QueryRowContext(ctx, `SELECT 1 FROM `+table+` WHERE id = ?`, id).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("sqlite: %s %s: %w", table[:len(table)-1], id, llmfleet.ErrNotFound)
	}
	return err
}

// affected returns the rows affected by an Exec.
func affected(res sql.Result, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// write runs fn in a transaction on the writing connection and commits it.
func (d *DB) write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	if d.w == nil || d.isClosed() {
		return ErrClosed
	}
	tx, err := d.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

func (d *DB) isClosed() bool {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.closed
}
