package dispatch

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmfleet/llmfleet"
)

// TestLeaseWait: the fleet loop's wait ends after its period, at once
// when a rescue asked for a renewal (before or during the wait), and
// reports false once the dispatcher's context ended.
func TestLeaseWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &leaseHolder{clock: llmfleet.RealClock{}}
		ctx, cancel := context.WithCancel(t.Context())
		start := time.Now()
		if !l.wait(ctx, time.Minute) || time.Since(start) != time.Minute {
			t.Fatalf("plain wait: %s", time.Since(start))
		}
		l.deferRescue(&waiter{}) // asked while not waiting
		start = time.Now()
		if !l.wait(ctx, time.Minute) || time.Since(start) != 0 {
			t.Fatalf("wait after a request for renewal: %s", time.Since(start))
		}
		if n := len(l.takeDeferred()); n != 1 {
			t.Fatalf("%d deferred rescues, want 1", n)
		}
		go func() {
			time.Sleep(10 * time.Second)
			l.deferRescue(&waiter{})
		}()
		start = time.Now()
		if !l.wait(ctx, time.Minute) || time.Since(start) != 10*time.Second {
			t.Fatalf("wait woken by a rescue: %s", time.Since(start))
		}
		cancel()
		if l.wait(ctx, time.Minute) {
			t.Fatal("wait after the dispatcher closed: true")
		}
	})
}

// TestLeaseHeld: without a SharedStore the lease is always held; with
// one, until its last renewal's end.
func TestLeaseHeld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &leaseHolder{clock: llmfleet.RealClock{}}
		if !l.held() {
			t.Fatal("no lease to hold: not held")
		}
		l.start(true, time.Now().Add(time.Second))
		if !l.held() {
			t.Fatal("not held before its end")
		}
		time.Sleep(time.Second)
		if l.held() {
			t.Fatal("held at its end")
		}
		l.renewed(time.Now().Add(time.Second))
		if !l.held() {
			t.Fatal("not held after a renewal")
		}
	})
}
