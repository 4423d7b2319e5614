package dispatch

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/llmfleet/llmfleet"
)

// waiterState is where a batched request is in its life.
type waiterState int

// The states of a waiter. The moves allowed between them are in moves.
const (
	// stateQueued: in a pool, or not yet in one (the zero state: a new
	// waiter, until it is pooled, sent sync, or picked up with its batch).
	stateQueued      waiterState = iota
	stateSubmitting              // its batch's intent is recorded and the create is under way
	stateReconciling             // its batch's create failed uncertainly; the reconciler looks for it
	stateInFlight                // its batch was created upstream
	stateDone                    // answered, failed, or withdrawn
	// stateElsewhere: with a SharedStore, in another replica's hands (a
	// batch it claimed, or what a replica adopted once this one's lease
	// ended): answered when its result is stored, or taken back (queued
	// again, or adopted with its batch).
	stateElsewhere
	// stateSync: sent sync at once, never pooled: its budget could not
	// hold a batch with a rescue, or the store could not take it in time.
	stateSync
)

var stateNames = [...]string{"queued", "submitting", "reconciling", "in_flight", "done", "elsewhere", "sync"}

func (s waiterState) String() string { return stateNames[s] }

// moves lists the states each state may move to. A waiter leaves done
// never; a batch proven not created sends its waiters back to queued. A
// move to the state a waiter is in is no move: the caller checks first.
var moves = map[waiterState][]waiterState{
	// (Reconciling: a request stored queued that a restart, or an
	// adoption, finds in a batch's intent.)
	stateQueued:      {stateSubmitting, stateReconciling, stateDone, stateElsewhere, stateSync},
	stateSubmitting:  {stateInFlight, stateReconciling, stateDone, stateElsewhere},
	stateReconciling: {stateInFlight, stateQueued, stateDone, stateElsewhere},
	stateInFlight:    {stateDone, stateElsewhere},
	stateElsewhere:   {stateQueued, stateSubmitting, stateReconciling, stateInFlight, stateDone},
	stateSync:        {stateDone},
}

// outcome is what a waiter is answered with.
type outcome struct {
	resp *llmfleet.Response
	err  error
}

// waiter is one batched request and its caller.
type waiter struct {
	id      string // llmfleet's request id
	req     *llmfleet.Request
	prov    llmfleet.Provider
	info    llmfleet.RequestInfo
	params  json.RawMessage // the body it is batched with
	plain   json.RawMessage // the body a sync call of it sends (params, but for a TTL upgrade)
	cost    *costView       // what the cost model knew of it when it was routed; nil: nothing
	rewrite string          // LedgerEntry.Rewrite of its batch's answer
	learnt  learnt          // what its answers taught the cost model
	// cacheBlind: routed cache-blind (Policy.CacheBlind): pooled by the
	// provider's pool key alone.
	cacheBlind bool
	budget     time.Duration
	arrived    time.Time // when it reached the dispatcher: budgets count from here
	accepted   time.Time // when it was durably accepted: pool windows count from here
	deadline   time.Time // arrived + budget; zero: no budget
	// reply answers the caller (SubmitFunc's done); nil when no caller
	// waits (detached).
	reply func(*llmfleet.Response, error)
	// retry: the id may name a request stored before (Request.Retry): it
	// is known free only once stored.
	retry bool
	// span is its request's span (trace.go), set before it is accepted;
	// nil when not traced.
	span trace.Span
	// direct: its budget cannot hold a batch with a rescue, so it is sent
	// sync at once, stored (with a durable journal) as such.
	direct bool
	// sentSync: sent sync at once, directly or because the store could
	// not take it in time; its answer is the sync route's.
	sentSync bool
	// added is closed once the store's write of the request is over,
	// addErr its outcome (nil: stored); nil without a durable journal.
	added  chan struct{}
	addErr error

	// Guarded by Dispatcher.mu.
	state     waiterState
	abandoned bool // the caller stopped waiting; the answer is still kept if durable
	detached  bool // no caller waits: recovered after a restart, or async
	// answered says the store holds its answer already (a rescue's): it
	// was picked up with a batch only for the batch's result, paid, to be
	// recorded late, and is never queued again (reconciler.requeue).
	answered  bool
	submitted time.Time
	pool      *pool
	customID  string

	replied     bool           // reply was called
	heldAt      time.Time      // when it was answered from its answer in hand (see hold)
	budgetTimer llmfleet.Timer // fires at deadline, for a caller that waits
	stopCtx     func() bool    // stops watching the caller's context
	rescueTimer llmfleet.Timer // fires at Policy.RescueAt
	rescuing    bool           // a rescue's sync call was made
	delivering  bool           // this process is storing an answer to it (deliver)
	followers   []*follower    // callers attached by id (see attach)
	// held is an answer in hand that could not be stored yet (its
	// delivery is tried again): its caller is answered from it when its
	// budget needs it, rather than pay for the request again.
	held *answer
}

// addState is the state a durable journal stores w in when it accepts
// it: submitted (without a batch) when it is sent sync at once.
func (w *waiter) addState() llmfleet.RequestState {
	if w.direct {
		return llmfleet.RequestSubmitted
	}
	return llmfleet.RequestQueued
}

// stored reports whether w's request is in the store: its write is over
// and succeeded. It must be called once w.added is closed.
func (w *waiter) stored() bool { return w.added != nil && w.addErr == nil }

// moveError is a move the waiter state machine refused.
type moveError struct {
	id       string
	from, to waiterState
}

func (e *moveError) Error() string {
	return fmt.Sprintf("dispatch: request %s: refused move %s → %s", e.id, e.from, e.to)
}

// to moves w to state s if the state machine allows it; otherwise it
// leaves w where it is and returns a *moveError. Guarded by
// Dispatcher.mu.
func (w *waiter) to(s waiterState) error {
	if slices.Contains(moves[w.state], s) {
		w.state = s
		return nil
	}
	return &moveError{id: w.id, from: w.state, to: s}
}

// must moves w to s, where the state machine has to allow it: a refusal
// there is a bug. It is reported by badMove.
func (w *waiter) must(s waiterState, log *slog.Logger) {
	if err := w.to(s); err != nil {
		badMove(err, log)
	}
}

// advance is must for a waiter that may have been answered first (by its
// rescue, or by what another replica stored): one done stays done. Any
// other refusal is a bug, reported by badMove.
func (w *waiter) advance(s waiterState, log *slog.Logger) {
	if w.state != stateDone {
		w.must(s, log)
	}
}

// badMove reports a move the state machine refused where no race
// explains it: a bug. The waiter stays where it was. In a test binary
// (testing.Testing: this package's tests, the simulator's, the proxy's)
// it panics, so that go test fails loudly wherever the engine runs; in a
// running server it is logged at level Error and the engine goes on: a
// refused move is never worth crashing the process (and its callers'
// answers) over.
func badMove(err error, log *slog.Logger) {
	if testing.Testing() {
		panic(err)
	}
	log.Error("waiter state machine refused a move; please report it", "err", err)
}

// size is the request's share of an encoded batch create body.
func (w *waiter) size() int64 { return int64(len(w.params)) + 96 }

// learnt records, per cache (sync, batch), that a waiter's answer taught
// the cost model (once, however often its delivery is tried) and the
// cost of the writes its route caused.
type learnt struct {
	mu   sync.Mutex
	done [2]bool
	miss [2]float64
}
