package dispatch

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/cachecost"
)

// Dispatcher routes requests by latency budget and pools the patient ones
// into provider batches. Set its fields, call Open, and Close it when done.
// It implements llmfleet.Submitter. It coordinates small parts: the
// Policy decides (route, flush time, next check), pools hold queued
// requests, trackers the batches in flight, the reconciler the creates
// whose fate is unknown, and a journal records the money path.
type Dispatcher struct {
	// Providers are the providers requests may name. A request that names
	// no provider goes to the first one.
	Providers []llmfleet.Provider
	// Policy holds the routing, flushing and polling knobs.
	Policy Policy
	// Clock tells the time and runs every timer and deadline of the
	// engine; nil means the real clock.
	Clock llmfleet.Clock
	// Logger receives one line per batch lifecycle event; nil discards.
	Logger *slog.Logger
	// Store, if set, makes batched requests durable: each is recorded
	// before it is acknowledged, each batch's intent before its create
	// call and its upstream id right after, each result with its ledger
	// entry (one transaction) before its caller gets it. Open picks up
	// what a previous process left: queued requests are pooled again,
	// batches in flight are polled again, and intents are reconciled by
	// their tag. A caller that stops waiting does not withdraw its
	// request: its answer is stored, to be read with Lookup.
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
	// Price returns a ledger entry with its costs filled in (see
	// ledger.Make); nil leaves entries unpriced. Entries are priced before
	// they are stored.
	Price func(llmfleet.LedgerEntry) llmfleet.LedgerEntry
	// Observe, if set, is called once for every request that got its
	// final answer, with its priced ledger entry; stored tells whether
	// the entry is in the Store already (batched requests with a Store:
	// written with their result) or is the hook's to record (the sync
	// route, or no Store). It is never called with the dispatcher's lock
	// held (see engineLock): it may block, or call back into the
	// Dispatcher, holding up only the goroutine that reports the entry.
	Observe func(e llmfleet.LedgerEntry, stored bool)
	// ObserveTurnaround, if set, is called once per ended batch and model
	// in it with the batch's turnaround (ended_at - created_at), under the
	// same rules as Observe.
	ObserveTurnaround func(provider, model string, turnaround time.Duration)
	// Flex, if set, reports whether a provider sells a model in a flex
	// tier (pricing.Table.Flex fits): such a model's requests may take
	// RouteFlex (see Policy.RouteFlex). A model the provider refuses the
	// tier for (llmfleet.ErrFlexUnsupported) is not routed flex again by
	// this process. Nil: no model has flex.
	Flex func(provider, model string) bool
	// Lease is, with a Store that several replicas share
	// (llmfleet.SharedStore), how long this process's lease on what it
	// owns lasts unless renewed: it is renewed every third of it, and
	// another replica adopts what this one owned once it ends. Default
	// 15s.
	Lease time.Duration
	// Prices, if set, returns a model's prices for the cost model
	// (package cachecost; cachecost.PricesOf of a pricing.Table's
	// Lookup fits): with it, a request whose prompt carries cache
	// breakpoints is routed by expected bill (see Plan), and the ledger's
	// "would have paid" of a discounted request is the sync route's
	// expected bill with its cache state. Nil: routing is cache-blind.
	Prices func(provider, model string) (cachecost.Prices, bool)
	// Go, if set, runs each goroutine the Dispatcher starts (creates,
	// polls, rescues, the sync calls of SubmitFunc, ...): it must run f
	// concurrently, e.g. with go f(). A simulator sets it to know when
	// the engine has no work running; nil means go f(). It may be called
	// with the dispatcher's lock held: it must only start f.
	Go func(f func())
	// TracerProvider, if set, makes the engine's spans (see trace.go): a
	// batched request's from acceptance to answer, a child of the span
	// in its caller's context, and its batch's create, polls and results,
	// linked to its requests' spans. Nil: no spans.
	TracerProvider trace.TracerProvider

	pol       Policy
	clock     llmfleet.Clock
	log       *slog.Logger
	predictor *predictor // batch turnarounds
	syncLat   *predictor // sync call latencies, for rescues
	flex      *flexTier  // what was learnt of flex tiers
	journal   journal
	calls     syncCaller           // the calls sent synchronously
	answers   answerer             // stores answers, then answers callers
	rescues   rescuer              // rescues late batched requests sync
	paid      *paidLedger          // the entries of calls paid apart from their answer
	accepts   acceptor             // takes batched requests in
	shared    llmfleet.SharedStore // set when the Store is one

	ctx    context.Context // ends when Close gives up waiting
	cancel context.CancelFunc
	work   workGroup // the work under way and the goroutines, which Close waits for

	mu     engineLock // see lock.go: hooks and answers run once it is released
	opened bool
	closed bool
	ids    requestIDs // the requests waiting here by id

	// The batch side's components (their state guarded by mu but for
	// their own locks): see pools.go, create.go, reconcile.go,
	// tracker.go, lease.go, fleet.go, recover.go, cache.go, route.go and
	// flex.go.
	pools      *poolSet
	creates    *creator
	reconciler *reconciler
	trackers   *trackerSet
	lease      *leaseHolder
	fleet      *fleet
	recovery   *adopter
	cache      *cacheModel
	router     *router
	flexer     *flexExec

	stats  counters
	traces engineTracer // the engine's spans (trace.go)
}

// counters are the dispatcher's statistics.
type counters struct {
	syncCalls, batchedCalls, batchesSubmitted, batchesEnded, errors atomic.Int64
	flexCalls, flexFallbacks                                        atomic.Int64
	queueDepth, managementCalls, droppedResults, budgetMisses       atomic.Int64
}

var _ llmfleet.Submitter = (*Dispatcher)(nil)
var _ llmfleet.FuncSubmitter = (*Dispatcher)(nil)

// Open prepares the dispatcher for use and, with a Store, picks up what a
// previous process left. It must be called once before the first Submit.
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
	if d.Store != nil && d.Sealer == nil {
		d.mu.Unlock()
		return fmt.Errorf("dispatch: a Store needs a Sealer")
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
	d.predictor = newPredictor(d.pol.TurnaroundPrior, d.pol.TurnaroundPriors, d.pol.OnTimeQuantile(), d.pol.TurnaroundSamples)
	d.syncLat = newPredictor(d.pol.SyncLatencyPrior, nil, syncLatencyQuantile, d.pol.TurnaroundSamples)
	d.flex = newFlexTier(d.pol)
	d.work.goHook = d.Go
	d.traces = newEngineTracer(d.TracerProvider)
	d.calls, d.answers, d.rescues, d.accepts = syncCaller{d}, answerer{d}, rescuer{d}, acceptor{d}
	d.paid = &paidLedger{d: d}
	d.ctx, d.cancel = context.WithCancel(context.Background())
	d.openParts()
	d.ids = requestIDs{d: d, live: map[string]*waiter{}}
	d.journal = nopJournal{}
	store := d.Store
	if store != nil {
		d.journal = &storeJournal{store: store, sealer: d.Sealer, sealed: map[string]bool{}}
		d.shared, _ = store.(llmfleet.SharedStore)
		if d.Lease <= 0 {
			d.Lease = 15 * time.Second
		}
		d.lease.start(d.shared != nil, d.clock.Now().Add(d.Lease))
		if d.Retention <= 0 {
			d.Retention = 29 * 24 * time.Hour
		}
		if d.LedgerRetention <= 0 {
			d.LedgerRetention = 400 * 24 * time.Hour
		}
	}
	d.pools.recovering = store != nil
	d.mu.Unlock()
	if store == nil {
		return nil
	}
	err := d.recovery.recover(d.ctx, store)
	d.mu.Lock()
	d.pools.recovering = false
	for _, pl := range d.pools.m {
		d.pools.scheduleLocked(pl)
	}
	d.mu.Unlock()
	if err != nil {
		return fmt.Errorf("dispatch: recovering stored state: %w", err)
	}
	d.mu.Lock()
	d.work.run(func() { d.recovery.purgeLoop(store) })
	if d.shared != nil {
		d.work.run(d.fleet.loop)
		d.work.run(func() { d.shared.Watch(d.ctx, d.fleet.storedElsewhere) })
	}
	d.mu.Unlock()
	return nil
}

// fingerprint returns the keyed fingerprint of a credential.
func (d *Dispatcher) fingerprint(c llmfleet.Credential) string {
	if d.Sealer != nil {
		return d.Sealer.Fingerprint(c)
	}
	return c.Fingerprint(nil)
}

// credLabel names a credential in a log line: its keyed fingerprint
// with a Sealer, else llmfleet.Redacted (never a label under a public key).
func credLabel(sealer llmfleet.Sealer, c llmfleet.Credential) string {
	if sealer != nil {
		return sealer.Fingerprint(c)
	}
	return llmfleet.Redacted
}

// Close stops accepting requests, flushes every pool at once and waits for
// the batches in flight to be answered until ctx ends. Requests still
// unanswered then fail with llmfleet.ErrClosed; with a Store they stay
// stored, for the next start.
func (d *Dispatcher) Close(ctx context.Context) error {
	d.mu.Lock()
	if !d.opened || d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	for _, p := range d.pools.m {
		d.pools.flushLocked(p, true)
	}
	var err error
	for err == nil {
		busy, idle := d.work.busy()
		if !busy {
			break
		}
		d.mu.Unlock()
		select {
		case <-idle:
		case <-ctx.Done():
			err = ctx.Err()
		}
		d.mu.Lock()
	}
	for _, t := range d.trackers.m {
		t.stop()
		for _, f := range t.flights {
			for _, w := range f.waiters {
				d.answers.finishLocked(w, nil, llmfleet.ErrClosed, nil)
			}
		}
	}
	for _, w := range d.ids.live {
		if w.state == stateElsewhere {
			// Another replica's to answer: its caller here is told the
			// process closed; nothing is concluded (no error counted).
			w.must(stateDone, d.log)
			d.rescues.stopLocked(w)
			d.traces.finishLocked(&d.mu, w, llmfleet.ErrClosed, nil)
			d.ids.releaseLocked(w, nil, llmfleet.ErrClosed)
			d.answers.replyLocked(w, nil, llmfleet.ErrClosed)
		}
	}
	d.cancel() // under mu: no timer callback starts a goroutine after this
	d.mu.Unlock()
	d.work.wait()
	if d.shared != nil {
		// What is still owned here is the others' to adopt at once.
		hctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		d.shared.Heartbeat(hctx, 0)
		cancel()
	}
	return err
}

// Stats returns a snapshot of the dispatcher's counters.
func (d *Dispatcher) Stats() llmfleet.Stats {
	d.mu.Lock()
	inflight := int64(d.trackers.countLocked())
	d.mu.Unlock()
	s := &d.stats
	return llmfleet.Stats{
		SyncCalls:        s.syncCalls.Load(),
		BatchedCalls:     s.batchedCalls.Load(),
		FlexCalls:        s.flexCalls.Load(),
		FlexFallbacks:    s.flexFallbacks.Load(),
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
	out := d.trackers.infoLocked()
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
