package sqlstore

import (
	"cmp"
	"context"
	"sync"
	"sync/atomic"

	"github.com/llmfleet/llmfleet"
)

// committer commits AddRequest calls in groups (see the package's doc):
// its workers, started by startCommitter and stopped by stop, each take
// the calls waiting and insert them together.
type committer struct {
	d    Dialect // Insert, Canceled and Committed
	max  int
	adds chan *addOp

	mu      sync.RWMutex // guards stopped against the senders on adds
	stopped bool
	quit    chan struct{}
	wg      sync.WaitGroup
}

// addOp is one AddRequest call waiting for its group.
type addOp struct {
	ctx   context.Context
	row   Row
	done  chan error
	claim opClaim
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

// startCommitter starts the workers of d's group commit.
func startCommitter(d Dialect) *committer {
	g := &committer{d: d, max: cmp.Or(d.MaxGroup, 512), quit: make(chan struct{})}
	g.adds = make(chan *addOp, g.max)
	for range max(d.Workers, 1) {
		g.wg.Add(1)
		go g.work()
	}
	return g
}

// add hands row to a group and returns its outcome: nil once it is
// stored, or the error for which it is not (ErrClosed once stopped).
func (g *committer) add(ctx context.Context, row Row) error {
	op := &addOp{ctx: ctx, row: row, done: make(chan error, 1)}
	g.mu.RLock()
	if g.stopped {
		g.mu.RUnlock()
		return ErrClosed
	}
	select {
	case g.adds <- op:
	case <-ctx.Done():
		g.mu.RUnlock()
		return ctx.Err()
	}
	g.mu.RUnlock()
	select {
	case err := <-op.done:
		return err
	case <-ctx.Done():
		if op.claim.abandon() {
			return ctx.Err() // its group will skip it
		}
		// In a group's insert: canceled on the server if the Dialect can
		// (Canceled), and the outcome, stored or not, is certain once the
		// insert answers.
		return <-op.done
	}
}

// isStopped reports whether stop was called.
func (g *committer) isStopped() bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.stopped
}

// stop refuses new calls, stops the workers and answers the calls handed
// over. It reports whether this call stopped it (false: stopped before).
func (g *committer) stop() bool {
	g.mu.Lock()
	if g.stopped {
		g.mu.Unlock()
		return false
	}
	// No add is between its check and its send once this lock is held.
	g.stopped = true
	close(g.quit)
	g.mu.Unlock()
	g.wg.Wait()
	for len(g.adds) > 0 {
		g.commit(g.fill(nil))
	}
	return true
}

// work commits groups of the calls waiting until stop.
func (g *committer) work() {
	defer g.wg.Done()
	group := make([]*addOp, 0, g.max)
	for {
		select {
		case op := <-g.adds:
			group = g.fill(append(group[:0], op))
			g.commit(group)
		case <-g.quit:
			return // stop answers what is left
		}
	}
}

// fill adds to group the calls waiting, up to max, without blocking.
func (g *committer) fill(group []*addOp) []*addOp {
	for len(group) < g.max {
		select {
		case op := <-g.adds:
			group = append(group, op)
		default:
			return group
		}
	}
	return group
}

// commit inserts a group and answers each of its calls. A call whose
// caller gave up before the group was sent is skipped, answered with its
// context's error.
func (g *committer) commit(group []*addOp) {
	live := make([]*addOp, 0, len(group))
	for _, op := range group {
		if err := op.ctx.Err(); err != nil || !op.claim.take() {
			op.done <- cmp.Or(err, context.Canceled)
			continue
		}
		live = append(live, op)
	}
	for len(live) > 0 {
		live = g.insertOnce(live)
	}
}

// insertOnce runs one insert of live and answers its calls, but for those
// it returns: the insert was canceled because another's context ended,
// and they are to be inserted again.
func (g *committer) insertOnce(live []*addOp) (again []*addOp) {
	ctx := context.Background() // a group outlives any one caller's ctx
	if g.d.Canceled != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		for _, op := range live {
			stop := context.AfterFunc(op.ctx, cancel)
			defer stop()
		}
	}
	rows := make([]Row, len(live))
	for i, op := range live {
		rows[i] = op.row
	}
	errs, err := g.d.Insert(ctx, rows)
	if err != nil && g.d.Canceled != nil && ctx.Err() != nil && g.d.Canceled(err) {
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
	if err != nil && g.d.Committed != nil {
		if stored := g.d.Committed(rows); stored != nil {
			// The insert committed, its answer lost.
			errs, err = stored, nil
		}
	}
	g.answer(live, errs, err)
	return nil
}

// answer answers the calls of an insert: each with its own outcome, or
// the insert's error. Of calls with one id, the first inserted it and
// the others find it taken.
func (g *committer) answer(live []*addOp, errs []error, err error) {
	seen := make(map[string]bool, len(live))
	for i, op := range live {
		var e error
		if errs != nil {
			e = errs[i]
		}
		id := op.row.Request.ID
		switch {
		case e == nil && err != nil:
			e = err
		case e == nil && seen[id]:
			e = llmfleet.ErrExists
		}
		if e != nil {
			op.done <- errorf(g.d.Name, "adding request %s: %w", id, e)
			continue
		}
		seen[id] = true
		op.done <- nil
	}
}
