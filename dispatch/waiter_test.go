package dispatch

import (
	"errors"
	"log/slog"
	"testing"
)

// The waiter's moves are the state machine the package doc describes:
// every pair of states, allowed or refused. A refused move leaves the
// waiter where it was and says so.
func TestWaiterMoves(t *testing.T) {
	const (
		q  = stateQueued
		s  = stateSubmitting
		r  = stateReconciling
		f  = stateInFlight
		d  = stateDone
		e  = stateElsewhere
		sy = stateSync
	)
	allowed := map[waiterState][]waiterState{
		q:  {s, r, d, e, sy},
		s:  {f, r, d, e},
		r:  {f, q, d, e},
		f:  {d, e},
		d:  {},
		e:  {q, s, r, f, d},
		sy: {d},
	}
	all := []waiterState{q, s, r, f, d, e, sy}
	for _, from := range all {
		for _, to := range all {
			ok := false
			for _, a := range allowed[from] {
				ok = ok || a == to
			}
			w := &waiter{id: "lfr_1", state: from}
			err := w.to(to)
			var me *moveError
			switch {
			case ok && (err != nil || w.state != to):
				t.Errorf("%s → %s refused (%v), want allowed", from, to, err)
			case !ok && (!errors.As(err, &me) || me.from != from || me.to != to || w.state != from):
				t.Errorf("%s → %s: %v, state %s; want refused, state %s", from, to, err, w.state, from)
			}
		}
	}
}

// A refused move where the state machine must allow it is a bug that
// fails the test run; advance leaves a waiter answered first done.
func TestRefusedMoveFailsTests(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	w := &waiter{id: "lfr_1", state: stateDone}
	w.advance(stateInFlight, log) // answered first: stays done
	if w.state != stateDone {
		t.Fatalf("state %s", w.state)
	}
	defer func() {
		err, _ := recover().(error)
		var me *moveError
		if !errors.As(err, &me) || me.from != stateDone || me.to != stateQueued {
			t.Fatalf("recovered %v, want the refused move", err)
		}
	}()
	w.must(stateQueued, log)
	t.Fatal("a refused must did not panic in a test binary")
}
