package dispatch

import (
	"time"

	"github.com/llmfleet/llmfleet"
)

// waiterState is where a batched request is in its life.
type waiterState int

const (
	stateQueued     waiterState = iota // in a pool
	stateSubmitting                    // its batch is being created
	stateInFlight                      // its batch was created upstream
	stateDone                          // answered, failed, or left
)

// outcome is what a waiter is answered with.
type outcome struct {
	resp *llmfleet.Response
	err  error
}

// waiter is one batched request and its caller.
type waiter struct {
	id       string // llmfleet's request id
	req      *llmfleet.Request
	provider string // the provider's name
	budget   time.Duration
	model    string
	enqueued time.Time
	deadline time.Time // zero: no budget
	done     chan outcome

	// Guarded by Dispatcher.mu.
	state     waiterState
	abandoned bool // the caller left after submission
	detached  bool // no caller waits: recovered after a restart, or async
	submitted time.Time
	pool      *pool
	customID  string
}

// size is the request's share of an encoded batch create body.
func (w *waiter) size() int64 { return int64(len(w.req.Body)) + 96 }
