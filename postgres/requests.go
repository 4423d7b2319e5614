package postgres

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/storecodec"
)

// AddRequest records a request accepted for batching (state queued). An
// id stored already is refused. Concurrent calls are committed together:
// committers (see DB.Committers) each insert what has gathered in one
// statement, so that the commits, each waiting for the server's flush to
// disk, carry many requests. A request whose ctx ended before its group
// was sent is not stored.
func (d *DB) AddRequest(ctx context.Context, r *llmfleet.StoredRequest) error {
	if r == nil || r.ID == "" {
		return errors.New("postgres: request without an id")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	state := storecodec.AddedState(r)
	h, err := storecodec.EncodeHeader(r.Header)
	if err != nil {
		return fmt.Errorf("postgres: request %s header: %w", r.ID, err)
	}
	op := &addOp{ctx: ctx, r: r, state: string(state), header: h, done: make(chan error, 1)}
	d.mu.RLock()
	if d.closed || d.adds == nil {
		d.mu.RUnlock()
		return ErrClosed
	}
	select {
	case d.adds <- op:
	case <-ctx.Done():
		d.mu.RUnlock()
		return ctx.Err()
	}
	d.mu.RUnlock()
	select {
	case err := <-op.done:
		return err
	case <-ctx.Done():
		if op.claim.abandon() {
			return ctx.Err() // its group will skip it
		}
		// In a group's insert: the insert is canceled on the server (see
		// insertGroup) and the outcome, stored or not, is certain once it
		// answers.
		return <-op.done
	}
}

// addOp is one AddRequest waiting for its group's commit.
type addOp struct {
	ctx    context.Context
	r      *llmfleet.StoredRequest
	state  string
	header []byte
	done   chan error
	claim  opClaim
}

// opClaim decides, once, who an AddRequest call belongs to: a group,
// which takes it into its insert, or its caller, which abandons it when
// its context ends first (groups then skip it).
type opClaim struct{ state atomic.Int32 }

const (
	opWaiting int32 = iota
	opTaken
	opAbandoned
)

// take reports whether a group may insert the call's request.
func (c *opClaim) take() bool { return c.state.CompareAndSwap(opWaiting, opTaken) }

// abandon reports whether the caller gave the call up before a group took
// it: its request will not be stored.
func (c *opClaim) abandon() bool { return c.state.CompareAndSwap(opWaiting, opAbandoned) }

// maxGroup is the most requests one insert carries.
const maxGroup = 512

// committer inserts the requests of AddRequest, a group at a time, until
// Close.
func (d *DB) committer(db *sql.DB) {
	defer d.wg.Done()
	group := make([]*addOp, 0, maxGroup)
	for {
		select {
		case op := <-d.adds:
			group = append(group[:0], op)
		fill:
			for len(group) < maxGroup {
				select {
				case op := <-d.adds:
					group = append(group, op)
				default:
					break fill
				}
			}
			insertGroup(db, d.run(), group)
		case <-d.quit:
			return
		}
	}
}

// insertGroup inserts a group's requests and answers each: nil, the id
// taken, or an error (then it is not stored). A request whose caller gave
// up before its group was sent is skipped. The insert of the others is
// canceled on the server as soon as the context of one of them ends (a
// lock held elsewhere may keep it waiting): those whose context ended are
// answered with its error, not stored, and the rest go in another insert.
func insertGroup(db *sql.DB, owner string, group []*addOp) {
	live := make([]*addOp, 0, len(group))
	for _, op := range group {
		if err := op.ctx.Err(); err != nil || !op.claim.take() {
			op.done <- cmp.Or(err, context.Canceled) // its caller gave up before the group was sent
			continue
		}
		live = append(live, op)
	}
	for len(live) > 0 {
		live = insertOnce(db, owner, live)
	}
}

// insertOnce runs one insert of live's requests (its own transaction) and
// answers them, but for those it returns: the insert was canceled because
// another's context ended, and they are to be inserted again.
func insertOnce(db *sql.DB, owner string, live []*addOp) (again []*addOp) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, op := range live {
		stop := context.AfterFunc(op.ctx, cancel)
		defer stop()
	}
	inserted, err := insertRows(ctx, db, owner, live)
	if err != nil && ctx.Err() != nil && isCanceled(err) {
		// Canceled on the server: nothing of the insert is stored.
		for _, op := range live {
			if cerr := op.ctx.Err(); cerr != nil {
				op.done <- cerr
			} else {
				again = append(again, op)
			}
		}
		return again
	}
	if err != nil {
		if mine := committed(db, live); len(mine) > 0 {
			// The statement committed, its answer lost: the group's rows
			// are there, and an id whose row is another's was taken.
			inserted, err = mine, nil
		}
	}
	seen := map[string]bool{}
	for _, op := range live {
		switch id := op.r.ID; {
		case err != nil:
			op.done <- fmt.Errorf("postgres: adding request %s: %w", id, err)
		case !inserted[id] || seen[id]:
			op.done <- fmt.Errorf("postgres: adding request %s: %w", id, llmfleet.ErrExists)
		default:
			seen[id] = true
			op.done <- nil
		}
	}
	return nil
}

// insertRows inserts the requests of ops in one statement and returns the
// ids it inserted (an id stored already is not).
func insertRows(ctx context.Context, db *sql.DB, owner string, ops []*addOp) (map[string]bool, error) {
	var (
		ids, providers, creds, models, states, clients, endpoints []string
		pools, owners                                             []string
		headers, bodies                                           [][]byte
		budgets                                                   []int64
		accepted, deadlines                                       []*int64
	)
	for _, op := range ops {
		r := op.r
		ids, providers, creds = append(ids, r.ID), append(providers, r.Provider), append(creds, r.CredentialID)
		headers, bodies = append(headers, op.header), append(bodies, storecodec.BytesOrEmpty(r.Body))
		models, budgets = append(models, r.Model), append(budgets, int64(r.Budget))
		accepted = append(accepted, nullNanos(r.AcceptedAt))
		deadlines = append(deadlines, nullNanos(r.Deadline))
		states, clients, endpoints = append(states, op.state), append(clients, r.Client), append(endpoints, r.Endpoint)
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
	return inserted, rows.Err()
}

// isCanceled reports whether err is the server's answer to a statement
// canceled by a cancel request (SQLSTATE 57014): the statement, and its
// transaction, did nothing.
func isCanceled(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "57014"
}

// GetRequest returns one request, with its result if it has one, or an
// error wrapping llmfleet.ErrNotFound.
func (d *DB) GetRequest(ctx context.Context, id string) (*llmfleet.StoredRequest, error) {
	db, err := d.conn()
	if err != nil {
		return nil, err
	}
	r, err := storecodec.ScanRequest(db.QueryRowContext(ctx, `SELECT `+storecodec.RequestColumns+` FROM requests WHERE id = $1`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("postgres: request %s: %w", id, llmfleet.ErrNotFound)
	}
	return r, err
}

// CompleteRequests stores the results of requests (state done) and their
// ledger entries, in one transaction, in the order given. A request done
// already, by an earlier call, another process or earlier in this one,
// keeps its first result and gets no ledger entry from this call. The rows
// are locked first, in id order (so two calls over the same requests wait
// for each other rather than deadlock), and then updated by one statement,
// whatever their number. An unknown id, or a nil result, fails the whole
// call, storing nothing.
func (d *DB) CompleteRequests(ctx context.Context, done []llmfleet.Completion) ([]bool, error) {
	if len(done) == 0 {
		return nil, nil
	}
	first := make([]llmfleet.Completion, 0, len(done))
	at := make([]int, 0, len(done)) // the index in done of each of first
	seen := make(map[string]bool, len(done))
	ids := make([]string, 0, len(done))
	for i, c := range done {
		if c.Result == nil {
			return nil, fmt.Errorf("postgres: request %s: nil result", c.RequestID)
		}
		if !seen[c.RequestID] { // a later completion of the same request loses
			seen[c.RequestID] = true
			first, at = append(first, c), append(at, i)
			ids = append(ids, c.RequestID)
		}
	}
	var kept []bool
	err := d.write(ctx, func(tx *sql.Tx) error {
		kept = make([]bool, len(done))
		wasDone, err := lockRequests(ctx, tx, ids)
		if err != nil {
			return err
		}
		var (
			upd             []string
			statuses        []int64
			bodies, errs, u [][]byte
			times           []*int64
			batchIDs        []string
			entries         []llmfleet.LedgerEntry
		)
		for j, c := range first {
			isDone, ok := wasDone[c.RequestID]
			if !ok {
				return fmt.Errorf("postgres: request %s: %w", c.RequestID, llmfleet.ErrNotFound)
			}
			if isDone {
				continue // its first result and entry stand
			}
			kept[at[j]] = true
			status, body, errJSON, err := storecodec.ResultColumns(c.Result)
			if err != nil {
				return fmt.Errorf("postgres: request %s: %w", c.RequestID, err)
			}
			usage, err := storecodec.EncodeUsage(c.Result.Usage)
			if err != nil {
				return err
			}
			upd, statuses = append(upd, c.RequestID), append(statuses, int64(status))
			bodies, errs, u = append(bodies, body), append(errs, errJSON), append(u, usage)
			times = append(times, nullNanos(c.Result.CompletedAt))
			batchIDs = append(batchIDs, c.Result.BatchID)
			if c.Ledger != nil {
				entries = append(entries, *c.Ledger)
			}
		}
		if len(upd) == 0 {
			return nil
		}
		if _, err := tx.ExecContext(ctx, `UPDATE requests AS r SET state = 'done', status_code = c.status,
			result_body = c.body, result_error = c.err, usage = c.usage, completed_at = c.at, result_batch_id = c.batch
			FROM unnest($1::text[], $2::bigint[], $3::bytea[], $4::bytea[], $5::bytea[], $6::bigint[], $7::text[])
				AS c(id, status, body, err, usage, at, batch)
			WHERE r.id = c.id`, upd, statuses, bodies, errs, u, times, batchIDs); err != nil {
			return fmt.Errorf("postgres: completing %d requests: %w", len(upd), err)
		}
		if err := addLedger(ctx, tx, entries); err != nil {
			return err
		}
		return d.notifyDone(ctx, tx, upd)
	})
	if err != nil {
		return nil, err
	}
	return kept, nil
}

// lockRequests locks the rows of ids, in id order, and returns, for each
// that exists, whether it is done.
func lockRequests(ctx context.Context, tx *sql.Tx, ids []string) (map[string]bool, error) {
	rows, err := tx.QueryContext(ctx, `SELECT id, state = 'done' FROM requests WHERE id = ANY($1) ORDER BY id FOR UPDATE`, ids)
	if err != nil {
		return nil, fmt.Errorf("postgres: locking %d requests: %w", len(ids), err)
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

// nullNanos is storecodec.Nanos(t) as an element of a bigint array: nil
// (NULL) for the zero time.
func nullNanos(t time.Time) *int64 {
	if n, ok := storecodec.Nanos(t).(int64); ok {
		return &n
	}
	return nil
}

// committed returns, of a group whose insert failed (its connection lost
// while it ran, say), the ids of the rows there as the group wrote them
// (id and acceptance time): the insert is one transaction, so any such row
// means it committed, and the group's other ids were taken. None means it
// did not commit, or that the server did not answer the look (three tries
// within seconds): the insert is then taken as failed.
func committed(db *sql.DB, group []*addOp) map[string]bool {
	ids := make([]string, len(group))
	for i, op := range group {
		ids[i] = op.r.ID
	}
	for try := range 3 {
		if try > 0 {
			time.Sleep(200 * time.Millisecond)
		}
		if mine, err := lookGroup(db, group, ids); err == nil {
			return mine
		}
	}
	return nil
}

// lookGroup returns the ids of group whose rows are there as it wrote
// them.
func lookGroup(db *sql.DB, group []*addOp, ids []string) (map[string]bool, error) {
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
	for _, op := range group {
		at, ok := found[op.r.ID]
		if ok && !op.r.AcceptedAt.IsZero() && storecodec.TimeOf(at).Equal(op.r.AcceptedAt) {
			mine[op.r.ID] = true
		}
	}
	return mine, nil
}
