package dispatch

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmfleet/llmfleet"
)

// Dispatcher routes requests by latency budget and pools the patient ones
// into provider batches. Set its fields, call Open, and Close it when done.
// It implements llmfleet.Submitter.
type Dispatcher struct {
	// Providers are the providers requests may name. A request that names
	// no provider goes to the first one.
	Providers []llmfleet.Provider
	// Policy holds the routing, flushing and polling knobs.
	Policy Policy
	// Clock tells the time; nil means the real clock.
	Clock llmfleet.Clock
	// Logger receives one line per batch lifecycle event; nil discards.
	Logger *slog.Logger
	// Store, if set, makes batched requests durable: each is recorded
	// before it is queued, each batch's intent before its create call and
	// its upstream id right after, each result before its caller gets it.
	// Open picks up what a previous process left: queued requests are
	// pooled again, batches in flight are polled again, and batches whose
	// create call may or may not have happened are reconciled with the
	// provider's list of batches, never blindly created again. A caller
	// that stops waiting (its context ends, its budget runs out) does not
	// withdraw its request: it is still batched and its answer stored, to
	// be read with Lookup.
	Store llmfleet.Store
	// Sealer seals the credentials the Store keeps (needed to poll after a
	// restart) and fingerprints credentials. Required with a Store.
	Sealer llmfleet.Sealer
	// Retention is how long stored results are kept. Default 29 days, as
	// the provider keeps batch results.
	Retention time.Duration
	// LedgerRetention is how long the Store keeps ledger entries, the cost
	// history, which outlives the answers. Default 400 days.
	LedgerRetention time.Duration
	// Observe, if set, is called once for every answered request with its
	// ledger entry (costs not filled in). It is called with the
	// dispatcher's lock held: it must be quick and must not call back into
	// the Dispatcher.
	Observe func(llmfleet.LedgerEntry)
	// ObserveTurnaround, if set, is called once per ended batch and model
	// in it with the batch's turnaround (ended_at - created_at), under the
	// same rules as Observe.
	ObserveTurnaround func(provider, model string, turnaround time.Duration)

	pol       Policy
	clock     llmfleet.Clock
	log       *slog.Logger
	predictor *predictor

	ctx    context.Context // ends when Close gives up waiting
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	opened   bool
	closed   bool
	pools    map[string]*pool
	trackers map[string]*tracker
	inflight int             // batches created and not yet resolved, plus creates under way
	idle     chan bool       // closed and replaced when inflight drops to zero
	sealed   map[string]bool // credential fingerprints already in the Store
	// recovering is set while Open picks up stored requests: their pools
	// are scheduled once all are back, so that requests whose window
	// passed while the process was down share batches again.
	recovering bool

	stats counters
}

// counters are the dispatcher's statistics.
type counters struct {
	syncCalls, batchedCalls, batchesSubmitted, batchesEnded, errors atomic.Int64
	queueDepth, managementCalls, droppedResults, budgetMisses       atomic.Int64
}

var _ llmfleet.Submitter = (*Dispatcher)(nil)

// Open prepares the dispatcher for use. It must be called once before the
// first Submit.
func (d *Dispatcher) Open() error {
	d.mu.Lock()
	if d.opened {
		d.mu.Unlock()
		return fmt.Errorf("dispatch: Open called twice")
	}
	if len(d.Providers) == 0 {
		d.mu.Unlock()
		return fmt.Errorf("dispatch: no providers")
	}
	d.opened = true
	d.pol = d.Policy.withDefaults()
	d.clock = d.Clock
	if d.clock == nil {
		d.clock = llmfleet.RealClock{}
	}
	d.log = d.Logger
	if d.log == nil {
		d.log = slog.New(slog.DiscardHandler)
	}
	d.predictor = newPredictor(d.pol)
	d.ctx, d.cancel = context.WithCancel(context.Background())
	d.pools = map[string]*pool{}
	d.trackers = map[string]*tracker{}
	d.idle = make(chan bool)
	d.sealed = map[string]bool{}
	if d.Store != nil {
		if d.Sealer == nil {
			d.mu.Unlock()
			return fmt.Errorf("dispatch: a Store needs a Sealer")
		}
		if d.Retention <= 0 {
			d.Retention = 29 * 24 * time.Hour
		}
		if d.LedgerRetention <= 0 {
			d.LedgerRetention = 400 * 24 * time.Hour
		}
	}
	d.recovering = d.Store != nil
	d.mu.Unlock()
	if d.Store != nil {
		err := d.recover(d.ctx)
		d.mu.Lock()
		d.recovering = false
		for _, pl := range d.pools {
			d.scheduleLocked(pl)
		}
		d.mu.Unlock()
		if err != nil {
			return fmt.Errorf("dispatch: recovering stored state: %w", err)
		}
		d.mu.Lock()
		d.goOwned(d.purgeLoop)
		d.mu.Unlock()
	}
	return nil
}

// fingerprint returns the keyed fingerprint of a credential.
func (d *Dispatcher) fingerprint(c llmfleet.Credential) string {
	if d.Sealer != nil {
		return d.Sealer.Fingerprint(c)
	}
	return c.Fingerprint(nil)
}

// Close stops accepting requests, flushes every pool at once and waits for
// the batches in flight to be answered until ctx ends. Requests still
// unanswered then fail with llmfleet.ErrClosed.
func (d *Dispatcher) Close(ctx context.Context) error {
	d.mu.Lock()
	if !d.opened || d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	for _, p := range d.pools {
		d.flushLocked(p, true)
	}
	for d.inflight > 0 {
		idle := d.idle
		d.mu.Unlock()
		select {
		case <-idle:
		case <-ctx.Done():
			d.mu.Lock()
			d.abortLocked()
			d.cancel()
			d.mu.Unlock()
			d.wg.Wait()
			return ctx.Err()
		}
		d.mu.Lock()
	}
	d.abortLocked()
	d.cancel() // under mu: no timer callback starts a goroutine after this
	d.mu.Unlock()
	d.wg.Wait()
	return nil
}

// abortLocked stops every timer and fails every request still waiting.
func (d *Dispatcher) abortLocked() {
	for _, t := range d.trackers {
		t.stopLocked()
		for _, b := range t.batches {
			for _, w := range b.waiters {
				d.finishLocked(w, nil, llmfleet.ErrClosed)
			}
		}
	}
}

// Stats returns a snapshot of the dispatcher's counters.
func (d *Dispatcher) Stats() llmfleet.Stats {
	d.mu.Lock()
	inflight := int64(0)
	for _, t := range d.trackers {
		inflight += int64(len(t.batches))
	}
	d.mu.Unlock()
	s := &d.stats
	return llmfleet.Stats{
		SyncCalls:        s.syncCalls.Load(),
		BatchedCalls:     s.batchedCalls.Load(),
		BatchesSubmitted: s.batchesSubmitted.Load(),
		BatchesEnded:     s.batchesEnded.Load(),
		Errors:           s.errors.Load(),
		QueueDepth:       s.queueDepth.Load(),
		BatchesInFlight:  inflight,
		ManagementCalls:  s.managementCalls.Load(),
		DroppedResults:   s.droppedResults.Load(),
		BudgetMisses:     s.budgetMisses.Load(),
	}
}

// FlightInfo describes one batch in flight.
type FlightInfo struct {
	ID        string    `json:"id"`
	Provider  string    `json:"provider"`
	Models    []string  `json:"models"`
	Requests  int       `json:"requests"`
	Submitted time.Time `json:"submitted"`
	// PredictedEnd is when the dispatcher expects it to end.
	PredictedEnd time.Time `json:"predicted_end"`
	// Ended is true once the provider reported it ended and its results
	// are being fetched.
	Ended bool `json:"ended"`
}

// InFlight lists the batches in flight, oldest first.
func (d *Dispatcher) InFlight() []FlightInfo {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []FlightInfo
	for _, t := range d.trackers {
		for _, f := range t.batches {
			out = append(out, FlightInfo{ID: f.id, Provider: t.provider.Name(), Models: slices.Clone(f.models),
				Requests: len(f.waiters), Submitted: f.submitted, PredictedEnd: f.submitted.Add(f.predicted), Ended: f.ended != nil})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Submitted.Before(out[j].Submitted) })
	return out
}

// provider returns the provider a request names.
func (d *Dispatcher) provider(req *llmfleet.Request) (llmfleet.Provider, error) {
	if req.Provider == "" {
		return d.Providers[0], nil
	}
	for _, p := range d.Providers {
		if p.Name() == req.Provider {
			return p, nil
		}
	}
	return nil, fmt.Errorf("%w: %q", llmfleet.ErrUnknownProvider, req.Provider)
}

// modelOf reads the model of a request body; "" if it has none.
func modelOf(body []byte) string {
	var m struct {
		Model string `json:"model"`
	}
	_ = json.Unmarshal(body, &m)
	return m.Model
}

// Plan returns the route Submit would choose for req now.
func (d *Dispatcher) Plan(budget time.Duration, req *llmfleet.Request) llmfleet.Route {
	switch {
	case budget == 0:
		return llmfleet.RouteBatch
	case budget <= d.pol.SyncMaxLatency:
		return llmfleet.RouteSync // decided without reading the body
	}
	p, err := d.provider(req)
	if err != nil {
		return llmfleet.RouteSync
	}
	if budget >= d.predictor.predict(p.Name(), modelOf(req.Body))+d.pol.slack() {
		return llmfleet.RouteBatch
	}
	return llmfleet.RouteSync
}

// Submit routes req by its latency budget (0: none given, which batches)
// and waits for its answer.
func (d *Dispatcher) Submit(ctx context.Context, budget time.Duration, req *llmfleet.Request) (*llmfleet.Response, error) {
	if d.Plan(budget, req) == llmfleet.RouteSync {
		return d.SubmitSync(ctx, req)
	}
	return d.SubmitBatch(ctx, budget, req)
}

// SubmitSync sends req to the provider's synchronous endpoint.
func (d *Dispatcher) SubmitSync(ctx context.Context, req *llmfleet.Request) (*llmfleet.Response, error) {
	p, err := d.provider(req)
	if err != nil {
		d.stats.errors.Add(1)
		return nil, err
	}
	d.mu.Lock()
	closed := d.closed
	d.mu.Unlock()
	if closed {
		return nil, llmfleet.ErrClosed
	}
	d.stats.syncCalls.Add(1)
	start := d.clock.Now()
	resp, err := p.Send(ctx, req)
	if d.Observe != nil {
		e := llmfleet.LedgerEntry{Time: d.clock.Now(), Provider: p.Name(), Model: modelOf(req.Body),
			Route: llmfleet.RouteSync, Outcome: llmfleet.Outcome(err)}
		e.Latency = e.Time.Sub(start)
		e.BudgetMet = err == nil
		if resp != nil {
			e.Usage = resp.Usage
		}
		d.Observe(e)
	}
	if err != nil {
		d.stats.errors.Add(1)
		return nil, err
	}
	resp.Route = llmfleet.RouteSync
	return resp, nil
}

// headerSignature identifies the pass-through headers that must be equal
// for requests to share a batch.
func headerSignature(h http.Header) string {
	var parts []string
	for k, vs := range h {
		lk := strings.ToLower(k)
		if strings.HasPrefix(lk, "anthropic-") {
			vs = slices.Clone(vs)
			sort.Strings(vs)
			parts = append(parts, lk+"="+strings.Join(vs, ","))
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, ";")
}

// SubmitBatch pools req into a batch whatever its budget and waits for its
// answer. A positive budget bounds the wait and may pull the pool's flush
// forward; 0 means no budget.
func (d *Dispatcher) SubmitBatch(ctx context.Context, budget time.Duration, req *llmfleet.Request) (*llmfleet.Response, error) {
	p, err := d.provider(req)
	if err != nil {
		d.stats.errors.Add(1)
		return nil, err
	}
	now := d.clock.Now()
	w := &waiter{
		id:       requestID(req),
		req:      req,
		provider: p.Name(),
		model:    modelOf(req.Body),
		enqueued: now,
		budget:   budget,
		done:     make(chan outcome, 1),
	}
	if budget > 0 {
		w.deadline = now.Add(budget)
	}
	if err := d.checkSize(p, w); err != nil {
		d.stats.errors.Add(1)
		return nil, err
	}
	if err := d.persist(ctx, p, w); err != nil {
		d.stats.errors.Add(1)
		return nil, err
	}
	if err := d.enqueue(p, w); err != nil {
		d.stats.errors.Add(1)
		return nil, err
	}
	d.stats.batchedCalls.Add(1)

	var expired <-chan struct{}
	if !w.deadline.IsZero() {
		ch := make(chan struct{})
		t := d.clock.AfterFunc(budget, func() { close(ch) })
		defer t.Stop()
		expired = ch
	}
	select {
	case o := <-w.done:
		if o.err != nil {
			d.stats.errors.Add(1)
		}
		return o.resp, o.err
	case <-ctx.Done():
		if o, ok := d.leave(w, ctx.Err()); ok {
			return o.resp, o.err
		}
		return nil, ctx.Err()
	case <-expired:
		missed := fmt.Errorf("%w (budget %s)", llmfleet.ErrBudgetExceeded, budget)
		if o, ok := d.leave(w, missed); ok {
			return o.resp, o.err
		}
		d.stats.budgetMisses.Add(1)
		d.stats.errors.Add(1)
		return nil, missed
	}
}

// requestID returns the id a batched request is kept under: the caller's
// choice, or a new one.
func requestID(req *llmfleet.Request) string {
	if req.ID != "" {
		return req.ID
	}
	return llmfleet.NewID("lfr_")
}

// leave takes a caller that stopped waiting out of its pool (unless the
// request is stored), or marks its result to be dropped. If the answer had
// already arrived it returns it.
func (d *Dispatcher) leave(w *waiter, cause error) (outcome, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	select {
	case o := <-w.done:
		return o, true
	default:
	}
	switch w.state {
	case stateQueued:
		if d.Store != nil {
			// The request is stored: it stays pooled and its answer is
			// kept, so that the caller, whose connection may have dropped,
			// can read it later by its id, as after a submission.
			w.abandoned = true
			break
		}
		w.pool.remove(w)
		d.stats.queueDepth.Add(-1)
		w.state = stateDone
		d.observeLocked(w, nil, cause) // the ledger still sees a budget it missed
		if len(w.pool.items) == 0 {
			w.pool.stopTimer()
			delete(d.pools, w.pool.key)
		} else {
			d.scheduleLocked(w.pool)
		}
	case stateSubmitting, stateInFlight:
		w.abandoned = true
	}
	return outcome{}, false
}

// finishLocked answers a waiter once.
func (d *Dispatcher) finishLocked(w *waiter, resp *llmfleet.Response, err error) {
	if w.state == stateDone {
		return
	}
	w.state = stateDone
	d.observeLocked(w, resp, err)
	if w.abandoned {
		d.stats.droppedResults.Add(1)
		return
	}
	w.done <- outcome{resp, err}
}

// beginWorkLocked and endWorkLocked count batches under way for Close.
func (d *Dispatcher) beginWorkLocked() { d.inflight++ }

func (d *Dispatcher) endWorkLocked() {
	d.inflight--
	if d.inflight == 0 {
		close(d.idle)
		d.idle = make(chan bool)
	}
}

// go runs f in a goroutine owned by the dispatcher.
func (d *Dispatcher) goOwned(f func()) {
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		f()
	}()
}
