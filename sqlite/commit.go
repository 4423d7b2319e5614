package sqlite

import (
	"cmp"
	"context"
	"fmt"
	"sync/atomic"

	"github.com/llmfleet/llmfleet"
)

// addOp is one AddRequest call waiting for the group committer.
type addOp struct {
	ctx   context.Context
	r     *llmfleet.StoredRequest
	done  chan error
	claim opClaim
}

// opClaim decides, once, who an AddRequest call belongs to: the group
// committer, which takes it into a transaction, or its caller, which
// abandons it when its context ends first (the committer then skips it).
type opClaim struct{ state atomic.Int32 }

const (
	opWaiting int32 = iota
	opTaken
	opAbandoned
)

// take reports whether the committer may insert the call's request.
func (c *opClaim) take() bool { return c.state.CompareAndSwap(opWaiting, opTaken) }

// abandon reports whether the caller gave the call up before the
// committer took it: its request will not be stored.
func (c *opClaim) abandon() bool { return c.state.CompareAndSwap(opWaiting, opAbandoned) }

// AddRequest records a request accepted for batching (State queued) and
// returns once it is committed. Concurrent calls are committed together,
// in one transaction and one fsync (group commit). A request whose id is
// stored already is refused. When AddRequest returns an error the request
// is not stored.
func (d *DB) AddRequest(ctx context.Context, r *llmfleet.StoredRequest) error {
	if r == nil || r.ID == "" {
		return fmt.Errorf("sqlite: request without an id")
	}
	op := &addOp{ctx: ctx, r: r, done: make(chan error, 1)}
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
			return ctx.Err() // the committer will skip it
		}
		// Taken into a transaction: it may be committed at any moment,
		// so the caller waits for the outcome (a request reported as
		// failed must not be stored).
		return <-op.done
	}
}

// groupCommitter commits the AddRequest calls in groups: it takes the
// calls waiting, up to MaxGroup, and commits them in one transaction.
// While it commits, new calls queue up for the next group. It runs from
// Open until Close, and commits what was handed to it before it returns.
func (d *DB) groupCommitter() {
	defer d.wg.Done()
	group := make([]*addOp, 0, d.MaxGroup)
	for {
		select {
		case op := <-d.adds:
			group = d.fill(append(group[:0], op))
			d.commitGroup(group)
		case <-d.quit:
			// Close holds no sender any more: drain what was handed over.
			for len(d.adds) > 0 {
				group = d.fill(group[:0])
				d.commitGroup(group)
			}
			return
		}
	}
}

// fill adds to group the calls waiting, up to MaxGroup, without blocking.
func (d *DB) fill(group []*addOp) []*addOp {
	for len(group) < d.MaxGroup {
		select {
		case op := <-d.adds:
			group = append(group, op)
		default:
			return group
		}
	}
	return group
}

// commitGroup inserts a group of requests in one transaction. A request
// that fails (a duplicate id) fails alone; a failed commit fails them all.
func (d *DB) commitGroup(group []*addOp) {
	errs := make([]error, len(group))
	live := 0
	for i, op := range group {
		if err := op.ctx.Err(); err != nil || !op.claim.take() {
			errs[i] = cmp.Or(err, context.Canceled) // its caller gave up before the commit began
			continue
		}
		live++
	}
	if live > 0 {
		d.insertGroup(group, errs)
	}
	for i, op := range group {
		op.done <- errs[i]
	}
}

func (d *DB) insertGroup(group []*addOp, errs []error) {
	ctx := context.Background() // a group outlives any one caller's ctx
	fail := func(err error) {
		for i := range errs {
			if errs[i] == nil {
				errs[i] = err
			}
		}
	}
	tx, err := d.w.BeginTx(ctx, nil)
	if err != nil {
		fail(fmt.Errorf("sqlite: adding requests: %w", err))
		return
	}
	stmt, err := tx.PrepareContext(ctx, insertRequest)
	if err != nil {
		tx.Rollback()
		fail(fmt.Errorf("sqlite: adding requests: %w", err))
		return
	}
	inserted := 0
	for i, op := range group {
		if errs[i] != nil {
			continue
		}
		args, err := insertArgs(op.r)
		var n int64
		if err == nil {
			// A failing INSERT undoes only itself; the transaction goes
			// on. A duplicate id inserts nothing.
			n, err = affected(stmt.ExecContext(ctx, args...))
		}
		if err == nil && n == 0 {
			err = llmfleet.ErrExists
		}
		if err != nil {
			errs[i] = fmt.Errorf("sqlite: adding request %s: %w", op.r.ID, err)
			continue
		}
		inserted++
	}
	stmt.Close()
	if inserted == 0 {
		tx.Rollback()
		return
	}
	if err := tx.Commit(); err != nil {
		fail(fmt.Errorf("sqlite: committing requests: %w", err))
	}
}
