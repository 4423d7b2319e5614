package dispatch

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/llmfleet/llmfleet"
)

// An Observe hook that blocks holds up only the goroutine that reports
// its entry: the engine accepts, batches and answers other requests
// meanwhile, and its caller is answered once the hook returns.
func TestBlockingObserveDoesNotBlockSubmissions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		blocked, release := make(chan struct{}), make(chan struct{})
		var first atomic.Bool
		d := &Dispatcher{Providers: []llmfleet.Provider{f}, Policy: Policy{BatchMinSize: 1},
			Observe: func(e llmfleet.LedgerEntry, _ bool) {
				if e.Route == llmfleet.RouteBatch && first.CompareAndSwap(false, true) {
					close(blocked)
					<-release
				}
			}}
		if err := d.Open(); err != nil {
			t.Fatal(err)
		}
		defer d.Close(context.Background())
		ctx := t.Context()
		a := submitAll(ctx, d, "a", 0, "held")
		<-blocked // its batch ended; its entry's hook blocks

		// Another credential's request (its own batch and tracker) and a
		// sync call go through meanwhile.
		b := submitAll(ctx, d, "b", 0, "other")
		if r := <-b; !strings.Contains(text(t, r), "re: other") {
			t.Fatalf("batched meanwhile: %s", r.resp.Body)
		}
		if _, err := d.SubmitSync(ctx, req("c", "sync")); err != nil {
			t.Fatal(err)
		}
		if got := d.Stats().BatchesSubmitted; got != 2 {
			t.Fatalf("batches submitted: %d, want 2", got)
		}
		synctest.Wait()
		select {
		case <-a:
			t.Fatal("answered before its entry was observed")
		default:
		}
		close(release)
		if r := <-a; !strings.Contains(text(t, r), "re: held") {
			t.Fatalf("held: %s", r.resp.Body)
		}
	})
}
