package dispatch

import (
	"encoding/json"
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
	// batch it claimed): answered when its result is stored, or taken
	// back (queued again, or adopted with its batch).
	stateElsewhere
)

var stateNames = [...]string{"queued", "submitting", "reconciling", "in_flight", "done", "elsewhere"}

func (s waiterState) String() string { return stateNames[s] }

// moves lists the states each state may move to. A waiter leaves done
// never; a batch proven not created sends its waiters back to queued.
var moves = map[waiterState][]waiterState{
	stateQueued:      {stateSubmitting, stateDone, stateElsewhere},
	stateSubmitting:  {stateInFlight, stateReconciling, stateDone, stateElsewhere},
	stateReconciling: {stateInFlight, stateQueued, stateDone, stateElsewhere},
	stateInFlight:    {stateDone},
	stateElsewhere:   {stateQueued, stateSubmitting, stateReconciling, stateInFlight, stateDone},
}

// outcome is what a waiter is answered with.
type outcome struct {
	resp *llmfleet.Response
	err  error
}

// waiter is one batched request and its caller.
type waiter struct {
	id       string // llmfleet's request id
	req      *llmfleet.Request
	prov     llmfleet.Provider
	info     llmfleet.RequestInfo
	params   json.RawMessage // the body it is batched with
	budget   time.Duration
	arrived  time.Time // when it reached the dispatcher: budgets count from here
	accepted time.Time // when it was durably accepted: pool windows count from here
	deadline time.Time // arrived + budget; zero: no budget
	// reply answers the caller (SubmitFunc's done); nil when no caller
	// waits (detached).
	reply func(*llmfleet.Response, error)

	// Guarded by Dispatcher.mu.
	state     waiterState
	abandoned bool // the caller stopped waiting; the answer is still kept if durable
	detached  bool // no caller waits: recovered after a restart, or async
	submitted time.Time
	pool      *pool
	customID  string

	replied     bool           // reply was called
	budgetTimer llmfleet.Timer // fires at deadline, for a caller that waits
	stopCtx     func() bool    // stops watching the caller's context
	rescueTimer llmfleet.Timer // fires at Policy.RescueAt
	rescuing    bool           // a rescue's sync call was made
	delivering  bool           // this process is storing an answer to it (deliver)
	followers   []*follower    // callers attached by id (see attach)
}

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
