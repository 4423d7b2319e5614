package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/sqlstore"
	"github.com/llmfleet/llmfleet/storecodec"
)

// SQLite writes many rows as one prepared statement executed a row at a
// time, within one transaction: the statement is compiled once, and
// every row is a call into the library, not a round trip. Its one writing
// connection holds the database's write lock for the whole transaction
// (BEGIN IMMEDIATE): what a transaction reads, no other one changes until
// it ends.

// dialect is what the SQLite store does differently from the core; w is
// its writing connection.
func (d *DB) dialect(w *sql.DB) sqlstore.Dialect {
	return sqlstore.Dialect{
		Name:        "sqlite",
		MaxGroup:    d.MaxGroup,
		Insert:      func(ctx context.Context, rows []sqlstore.Row) ([]error, error) { return insertRows(ctx, w, rows) },
		Submit:      submitRequests,
		Lock:        lockRequests,
		SaveResults: saveResults,
		AddLedger:   addBlock,
		// From the prefixes_seen index (see TestCachePlan).
		PurgePrefixes: `DELETE FROM prefixes WHERE seen_at IS NULL OR seen_at < ?`,
		Purge:         purgeBlocks,
	}
}

const insertRequest = `INSERT INTO requests (id, provider, credential_id, header, body,
	model, budget, accepted_at, deadline, state, client, endpoint) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
	ON CONFLICT (id) DO NOTHING`

// insertRows inserts a group of requests in one transaction on w. A row
// that fails (a duplicate id, which inserts nothing) fails alone: a
// failing INSERT undoes only itself, and the transaction goes on.
func insertRows(ctx context.Context, w *sql.DB, rows []sqlstore.Row) ([]error, error) {
	tx, err := w.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	stmt, err := tx.PrepareContext(ctx, insertRequest)
	if err != nil {
		tx.Rollback()
		return nil, err
	}
	errs := make([]error, len(rows))
	inserted := 0
	for i, row := range rows {
		r := row.Request
		n, err := affected(stmt.ExecContext(ctx, r.ID, r.Provider, r.CredentialID, row.Header, storecodec.BytesOrEmpty(r.Body),
			r.Model, int64(r.Budget), storecodec.Nanos(r.AcceptedAt), storecodec.Nanos(r.Deadline), string(row.State), r.Client, r.Endpoint))
		if err == nil && n == 0 {
			err = llmfleet.ErrExists
		}
		errs[i] = err
		if err == nil {
			inserted++
		}
	}
	stmt.Close()
	if inserted == 0 {
		tx.Rollback()
		return errs, nil
	}
	if err := tx.Commit(); err != nil {
		return errs, fmt.Errorf("committing: %w", err)
	}
	return errs, nil
}

// submitRequests moves the queued requests of ids into a batch.
func submitRequests(ctx context.Context, tx *sql.Tx, batchID string, ids, customIDs []string) (int64, error) {
	stmt, err := tx.PrepareContext(ctx, `UPDATE requests SET state = 'submitted', batch_id = ?, custom_id = ?
		WHERE id = ? AND state = 'queued'`)
	if err != nil {
		return 0, err
	}
	defer stmt.Close()
	var total int64
	for i, id := range ids {
		n, err := affected(stmt.ExecContext(ctx, batchID, customIDs[i], id))
		if err != nil {
			return 0, fmt.Errorf("request %s: %w", id, err)
		}
		total += n
	}
	return total, nil
}

// idsPerQuery bounds the ids one query asks for, each a parameter.
const idsPerQuery = 500

// lockRequests returns, of the requests of ids, those that exist and
// whether each is done; the transaction's write lock keeps them so.
func lockRequests(ctx context.Context, tx *sql.Tx, ids []string) (map[string]bool, error) {
	done := make(map[string]bool, len(ids))
	for len(ids) > 0 {
		n := min(len(ids), idsPerQuery)
		rows, err := tx.QueryContext(ctx, `SELECT id, state = 'done' FROM requests WHERE id IN (`+params(n)+`)`, anys(ids[:n])...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var id string
			var isDone bool
			if err := rows.Scan(&id, &isDone); err != nil {
				rows.Close()
				return nil, err
			}
			done[id] = isDone
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
		ids = ids[n:]
	}
	return done, nil
}

// saveResults stores results, their requests moving to done.
func saveResults(ctx context.Context, tx *sql.Tx, results []sqlstore.Result) error {
	stmt, err := tx.PrepareContext(ctx, `UPDATE requests SET state = 'done',
		status_code = ?, result_body = ?, result_error = ?, usage = ?, completed_at = ?, result_batch_id = ?
		WHERE id = ?`)
	if err != nil {
		return err
	}
	defer stmt.Close()
	for _, r := range results {
		if _, err := stmt.ExecContext(ctx, r.Status, r.Body, r.Err, r.Usage, storecodec.Nanos(r.CompletedAt), r.BatchID, r.ID); err != nil {
			return fmt.Errorf("request %s: %w", r.ID, err)
		}
	}
	return nil
}

// params returns n comma-separated placeholders.
func params(n int) string { return "?" + strings.Repeat(", ?", n-1) }

// anys returns ss as query arguments.
func anys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// affected returns the rows affected by an Exec.
func affected(res sql.Result, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
