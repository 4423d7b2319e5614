package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/storecodec"
)

// requestColumns are the columns scanRequest reads, in order.
const requestColumns = `id, provider, credential_id, header, body, model, budget,
	accepted_at, deadline, state, batch_id, custom_id,
	status_code, result_body, result_error, usage, completed_at, client, endpoint`

// AddRequest records a request accepted for batching (state queued). An
// id stored already is refused. Concurrent calls commit on connections
// of their own; the server groups their commits.
func (d *DB) AddRequest(ctx context.Context, r *llmfleet.StoredRequest) error {
	if r == nil || r.ID == "" {
		return errors.New("postgres: request without an id")
	}
	db, err := d.conn()
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	h, err := storecodec.EncodeHeader(r.Header)
	if err != nil {
		return fmt.Errorf("postgres: request %s header: %w", r.ID, err)
	}
	n, err := affected(db.ExecContext(ctx, `INSERT INTO requests (id, provider, credential_id, header, body,
		model, budget, accepted_at, deadline, state, client, endpoint)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'queued', $10, $11) ON CONFLICT (id) DO NOTHING`,
		r.ID, r.Provider, r.CredentialID, h, storecodec.BytesOrEmpty(r.Body),
		r.Model, int64(r.Budget), storecodec.Nanos(r.AcceptedAt), storecodec.Nanos(r.Deadline), r.Client, r.Endpoint))
	if err != nil {
		return fmt.Errorf("postgres: adding request %s: %w", r.ID, err)
	}
	if n == 0 {
		return fmt.Errorf("postgres: adding request %s: the id is taken", r.ID)
	}
	return nil
}

// rowScanner is a *sql.Row or *sql.Rows.
type rowScanner interface{ Scan(dest ...any) error }

// scanRequest reads one row of requestColumns.
func scanRequest(s rowScanner) (*llmfleet.StoredRequest, error) {
	var (
		r                             llmfleet.StoredRequest
		header, usage                 []byte
		resultBody, resultErr         []byte
		budget                        int64
		accepted, deadline, completed sql.NullInt64
		batchID, customID             sql.NullString
		status                        sql.NullInt64
		state                         string
	)
	err := s.Scan(&r.ID, &r.Provider, &r.CredentialID, &header, &r.Body, &r.Model, &budget,
		&accepted, &deadline, &state, &batchID, &customID,
		&status, &resultBody, &resultErr, &usage, &completed, &r.Client, &r.Endpoint)
	if err != nil {
		return nil, err
	}
	if r.Header, err = storecodec.DecodeHeader(header); err != nil {
		return nil, fmt.Errorf("postgres: request %s header: %w", r.ID, err)
	}
	if r.Body == nil {
		r.Body = []byte{}
	}
	r.Budget = time.Duration(budget)
	r.AcceptedAt, r.Deadline = storecodec.TimeOf(accepted), storecodec.TimeOf(deadline)
	r.State = llmfleet.RequestState(state)
	r.BatchID, r.CustomID = batchID.String, customID.String
	if r.State == llmfleet.RequestDone {
		res, err := storecodec.ResultOf(status, resultBody, resultErr)
		if err != nil {
			return nil, fmt.Errorf("postgres: request %s: %w", r.ID, err)
		}
		res.CompletedAt = storecodec.TimeOf(completed)
		if res.Usage, err = storecodec.DecodeUsage(usage); err != nil {
			return nil, fmt.Errorf("postgres: request %s usage: %w", r.ID, err)
		}
		r.Result = res
	}
	return &r, nil
}

// GetRequest returns one request, with its result if it has one, or an
// error wrapping llmfleet.ErrNotFound.
func (d *DB) GetRequest(ctx context.Context, id string) (*llmfleet.StoredRequest, error) {
	db, err := d.conn()
	if err != nil {
		return nil, err
	}
	r, err := scanRequest(db.QueryRowContext(ctx, `SELECT `+requestColumns+` FROM requests WHERE id = $1`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("postgres: request %s: %w", id, llmfleet.ErrNotFound)
	}
	return r, err
}

// CompleteRequests stores the results of requests (state done) and their
// ledger entries, in one transaction, in the order given. A request done
// already, by an earlier call, another process or earlier in this one,
// keeps its first result and gets no ledger entry from this call (the
// update is conditional on the row not being done, and a concurrent one
// waits on the row's lock). An unknown id, or a nil result, fails the
// whole call, storing nothing.
func (d *DB) CompleteRequests(ctx context.Context, done []llmfleet.Completion) error {
	if len(done) == 0 {
		return nil
	}
	return d.write(ctx, func(tx *sql.Tx) error {
		var entries []llmfleet.LedgerEntry
		for _, c := range done {
			if c.Result == nil {
				return fmt.Errorf("postgres: request %s: nil result", c.RequestID)
			}
			status, body, errJSON, err := storecodec.ResultColumns(c.Result)
			if err != nil {
				return fmt.Errorf("postgres: request %s: %w", c.RequestID, err)
			}
			u, err := storecodec.EncodeUsage(c.Result.Usage)
			if err != nil {
				return err
			}
			n, err := affected(tx.ExecContext(ctx, `UPDATE requests SET state = 'done',
				status_code = $1, result_body = $2, result_error = $3, usage = $4, completed_at = $5
				WHERE id = $6 AND state != 'done'`, status, body, errJSON, u, storecodec.Nanos(c.Result.CompletedAt), c.RequestID))
			if err != nil {
				return fmt.Errorf("postgres: completing request %s: %w", c.RequestID, err)
			}
			if n == 0 {
				if err := mustExist(ctx, tx, "requests", c.RequestID); err != nil {
					return err
				}
				continue // done already: its first result and entry stand
			}
			if c.Ledger != nil {
				entries = append(entries, *c.Ledger)
			}
		}
		return addLedger(ctx, tx, entries)
	})
}

// mustExist returns an error wrapping llmfleet.ErrNotFound unless table
// has a row with id.
func mustExist(ctx context.Context, tx *sql.Tx, table, id string) error {
	var one int
	err := tx.QueryRowContext(ctx, `SELECT 1 FROM `+table+` WHERE id = $1`, id).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("postgres: %s %s: %w", table[:len(table)-1], id, llmfleet.ErrNotFound)
	}
	return err
}
