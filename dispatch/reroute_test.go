package dispatch

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmfleet/llmfleet"
)

// goHooked is a Dispatcher.Go hook whose goroutines a stack trace names.
func goHooked(f func()) { go f() }

// TestRerouteRunsThroughTheGoHook: the sync calls of a batch that failed
// as a whole run in goroutines started by the Go hook (a simulator runs
// every goroutine of the engine as one of its tasks).
func TestRerouteRunsThroughTheGoHook(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.turnaround = func(string) time.Duration { return 10 * time.Second }
		f.failure = &llmfleet.Error{StatusCode: 429, Type: "token_limit_exceeded", Message: "full"}
		var mu sync.Mutex
		var creators []string
		f.onSend = func() {
			buf := make([]byte, 64<<10)
			stack := string(buf[:runtime.Stack(buf, false)])
			i := strings.Index(stack, "created by ")
			mu.Lock()
			creators = append(creators, strings.SplitN(stack[i+len("created by "):], "\n", 2)[0])
			mu.Unlock()
		}
		d := &Dispatcher{Providers: []llmfleet.Provider{f}, Go: goHooked,
			Policy: Policy{BatchMinSize: 3, SyncLatencyPrior: 5 * time.Second, NoRescue: true}}
		if err := d.Open(); err != nil {
			t.Fatal(err)
		}
		defer d.Close(t.Context())
		errs := make(chan error, 3)
		for _, s := range []string{"a", "b", "c"} {
			go func() {
				r, err := d.SubmitBatch(t.Context(), time.Hour, req("k", s))
				if err == nil && r.Route != llmfleet.RouteSync {
					err = fmt.Errorf("route %s", r.Route)
				}
				errs <- err
			}()
		}
		for range 3 {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		if len(creators) != 3 {
			t.Fatalf("%d sync calls, want 3", len(creators))
		}
		for _, c := range creators {
			if !strings.Contains(c, "dispatch.goHooked") {
				t.Errorf("sync call in a goroutine created by %s, not by the Go hook", c)
			}
		}
	})
}
