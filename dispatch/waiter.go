package dispatch

import (
	"encoding/json"
	"sync"
	"time"

	"github.com/llmfleet/llmfleet"
)

// waiterState is where a batched request is in its life.
type waiterState int

// The states of a waiter. The moves allowed between them are in moves.
const (
	stateQueued      waiterState = iota // in a pool
	stateSubmitting                     // its batch's intent is recorded and the create is under way
	stateReconciling                    // its batch's create failed uncertainly; the reconciler looks for it
	stateInFlight                       // its batch was created upstream
	stateDone                           // answered, failed, or withdrawn
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
// never; a batch proven not created sends its waiters back to queued.
var moves = map[waiterState][]waiterState{
	stateQueued:      {stateSubmitting, stateDone, stateElsewhere, stateSync},
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

// to moves w to state s if the move is allowed, and reports whether it
// was.
func (w *waiter) to(s waiterState) bool {
	for _, ok := range moves[w.state] {
		if ok == s {
			w.state = s
			return true
		}
	}
	return false
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
