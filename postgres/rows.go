package postgres

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/sqlstore"
	"github.com/llmfleet/llmfleet/storecodec"
)

// PostgreSQL writes many rows in one statement, their columns as arrays
// (unnest): a round trip a row would bound a group, or a batch of
// thousands, by the network's latency.

// maxGroup is the most requests one insert carries.
const maxGroup = 512

// dialect is what the PostgreSQL store does differently from the core,
// over the pool db; notify is the channel of its completions.
func (d *DB) dialect(db *sql.DB, notify string) sqlstore.Dialect {
	return sqlstore.Dialect{
		Name:      "postgres",
		Numbered:  true,
		ByteOrder: ` COLLATE "C"`,
		Snapshot:  &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true},
		Workers:   cmp.Or(max(d.Committers, 0), 2),
		MaxGroup:  maxGroup,
		Insert: func(ctx context.Context, rows []sqlstore.Row) ([]error, error) {
			return insertRows(ctx, db, d.run.current(), rows)
		},
		// The pool's connections cancel a statement on the server (see
		// pool): a group's insert waiting on a lock held elsewhere is
		// canceled, not left to commit later.
		Canceled:    isCanceled,
		Committed:   func(rows []sqlstore.Row) []error { return committed(db, rows) },
		Submit:      submitRequests,
		Lock:        lockRequests,
		SaveResults: saveResults,
		Completed: func(ctx context.Context, tx *sql.Tx, ids []string) error {
			return notifyDone(ctx, tx, notify, ids)
		},
		AddLedger:     addLedger,
		Owner:         d.run.current,
		PurgePrefixes: purgePrefixes,
	}
}

// insertRows inserts the requests of a group, owned by owner, in one
// statement (its own transaction): an id stored already, or earlier in
// the group, is not inserted.
func insertRows(ctx context.Context, db *sql.DB, owner string, group []sqlstore.Row) ([]error, error) {
	var (
		ids, providers, creds, models, states, clients, endpoints []string
		pools, owners                                             []string
		headers, bodies                                           [][]byte
		budgets                                                   []int64
		accepted, deadlines                                       []*int64
	)
	for _, row := range group {
		r := row.Request
		ids, providers, creds = append(ids, r.ID), append(providers, r.Provider), append(creds, r.CredentialID)
		headers, bodies = append(headers, row.Header), append(bodies, storecodec.BytesOrEmpty(r.Body))
		models, budgets = append(models, r.Model), append(budgets, int64(r.Budget))
		accepted = append(accepted, nullNanos(r.AcceptedAt))
		deadlines = append(deadlines, nullNanos(r.Deadline))
		states, clients, endpoints = append(states, string(row.State)), append(clients, r.Client), append(endpoints, r.Endpoint)
		pools, owners = append(pools, r.Pool), append(owners, owner)
	}
	rows, err := db.QueryContext(ctx, `INSERT INTO requests (id, provider, credential_id, header, body,
		model, budget, accepted_at, deadline, state, client, endpoint, pool, owner)
		SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bytea[], $5::bytea[], $6::text[], $7::bigint[],
			$8::bigint[], $9::bigint[], $10::text[], $11::text[], $12::text[], $13::text[], $14::text[])
		ON CONFLICT (id) DO NOTHING RETURNING id`,
		ids, providers, creds, headers, bodies, models, budgets, accepted, deadlines, states, clients, endpoints, pools, owners)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	inserted := map[string]bool{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		inserted[id] = true
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return outcomes(group, inserted), nil
}

// outcomes returns the outcome of each row of a group of which the ids of
// inserted were inserted: nil, or llmfleet.ErrExists.
func outcomes(group []sqlstore.Row, inserted map[string]bool) []error {
	errs := make([]error, len(group))
	for i, row := range group {
		if !inserted[row.Request.ID] {
			errs[i] = llmfleet.ErrExists
		}
	}
	return errs
}

// isCanceled reports whether err is the server's answer to a statement
// canceled by a cancel request (SQLSTATE 57014): the statement, and its
// transaction, did nothing.
func isCanceled(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "57014"
}

// committed returns, of a group whose insert failed (its connection lost
// while it ran, say), the outcomes of its rows if it committed: the
// insert is one transaction, so any row there as the group wrote it (id
// and acceptance time) means it did, and the group's other ids were
// taken. Nil means it did not commit, or that the server did not answer
// the look (three tries within seconds): the insert is then taken as
// failed.
func committed(db *sql.DB, group []sqlstore.Row) []error {
	ids := make([]string, len(group))
	for i, row := range group {
		ids[i] = row.Request.ID
	}
	for try := range 3 {
		if try > 0 {
			time.Sleep(200 * time.Millisecond)
		}
		if mine, err := lookGroup(db, group, ids); err == nil {
			if len(mine) == 0 {
				return nil
			}
			return outcomes(group, mine)
		}
	}
	return nil
}

// lookGroup returns the ids of group whose rows are there as it wrote
// them.
func lookGroup(db *sql.DB, group []sqlstore.Row, ids []string) (map[string]bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rows, err := db.QueryContext(ctx, `SELECT id, accepted_at FROM requests WHERE id = ANY($1)`, ids)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	found := map[string]sql.NullInt64{}
	for rows.Next() {
		var id string
		var at sql.NullInt64
		if err := rows.Scan(&id, &at); err != nil {
			return nil, err
		}
		found[id] = at
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	mine := map[string]bool{}
	for _, row := range group {
		r := row.Request
		at, ok := found[r.ID]
		if ok && !r.AcceptedAt.IsZero() && storecodec.TimeOf(at).Equal(r.AcceptedAt) {
			mine[r.ID] = true
		}
	}
	return mine, nil
}

// submitRequests moves the queued requests of ids into a batch, in one
// statement.
func submitRequests(ctx context.Context, tx *sql.Tx, batchID string, ids, customIDs []string) (int64, error) {
	res, err := tx.ExecContext(ctx, `UPDATE requests r SET state = 'submitted', batch_id = $1, custom_id = c.custom
		FROM unnest($2::text[], $3::text[]) AS c(id, custom) WHERE r.id = c.id AND r.state = 'queued'`, batchID, ids, customIDs)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// lockRequests locks the rows of ids, in id order (so that two calls over
// the same requests wait for each other rather than deadlock), and
// returns, for each that exists, whether it is done.
func lockRequests(ctx context.Context, tx *sql.Tx, ids []string) (map[string]bool, error) {
	rows, err := tx.QueryContext(ctx, `SELECT id, state = 'done' FROM requests WHERE id = ANY($1) ORDER BY id FOR UPDATE`, ids)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	done := make(map[string]bool, len(ids))
	for rows.Next() {
		var id string
		var isDone bool
		if err := rows.Scan(&id, &isDone); err != nil {
			return nil, err
		}
		done[id] = isDone
	}
	return done, rows.Err()
}

// saveResults stores results in one statement, whatever their number.
func saveResults(ctx context.Context, tx *sql.Tx, results []sqlstore.Result) error {
	var (
		ids, batchIDs   []string
		statuses        []int64
		bodies, errs, u [][]byte
		times           []*int64
	)
	for _, r := range results {
		ids, statuses = append(ids, r.ID), append(statuses, int64(r.Status))
		bodies, errs, u = append(bodies, r.Body), append(errs, r.Err), append(u, r.Usage)
		times, batchIDs = append(times, nullNanos(r.CompletedAt)), append(batchIDs, r.BatchID)
	}
	_, err := tx.ExecContext(ctx, `UPDATE requests AS r SET state = 'done', status_code = c.status,
		result_body = c.body, result_error = c.err, usage = c.usage, completed_at = c.at, result_batch_id = c.batch
		FROM unnest($1::text[], $2::bigint[], $3::bytea[], $4::bytea[], $5::bytea[], $6::bigint[], $7::text[])
			AS c(id, status, body, err, usage, at, batch)
		WHERE r.id = c.id`, ids, statuses, bodies, errs, u, times, batchIDs)
	return err
}

// addLedger inserts entries, one row each, the entry as JSON.
func addLedger(ctx context.Context, tx *sql.Tx, entries []llmfleet.LedgerEntry) error {
	for _, e := range entries {
		b, err := json.Marshal(e)
		if err != nil {
			return fmt.Errorf("entry: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO ledger (time, entry) VALUES ($1, $2)`, e.Time.UnixNano(), b); err != nil {
			return fmt.Errorf("entry: %w", err)
		}
	}
	return nil
}

// nullNanos is storecodec.Nanos(t) as an element of a bigint array: nil
// (NULL) for the zero time.
func nullNanos(t time.Time) *int64 {
	if n, ok := storecodec.Nanos(t).(int64); ok {
		return &n
	}
	return nil
}
