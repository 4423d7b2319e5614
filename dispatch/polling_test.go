package dispatch

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmfleet/llmfleet"
)

// TestPollingCost measures, in virtual time, how many management calls one
// batch costs and how long after its end its result reaches the caller,
// for a batch that ends before, near and long after its predicted end.
func TestPollingCost(t *testing.T) {
	for _, c := range []struct {
		name       string
		turnaround time.Duration
		maxCalls   int
		maxDelay   time.Duration
		learned    bool
	}{
		{"ends early (20s, prior 120s)", 20 * time.Second, 4, 30 * time.Second, false},
		{"ends near prediction (110s)", 110 * time.Second, 8, 5 * time.Second, false},
		{"ends late (30m)", 30 * time.Minute, 45, 3 * time.Minute, false},
		{"ends very late (6h)", 6 * time.Hour, 70, 36 * time.Minute, false},
		{"6h, prediction learned", 6 * time.Hour, 25, 5 * time.Second, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFake()
				f.turnaround = func(string) time.Duration { return c.turnaround }
				d := open(t, f, Policy{BatchMinSize: 1})
				if c.learned {
					for range minSamples {
						d.predictor.observe(f.Name(), "m1", c.turnaround)
					}
				}
				start := time.Now()
				resp, err := d.SubmitBatch(t.Context(), 0, req("k", "x"))
				if err != nil {
					t.Fatal(err)
				}
				delay := time.Since(start) - c.turnaround
				calls := d.Stats().ManagementCalls
				t.Logf("turnaround %s: %d management calls (create, polls, results), result %s after the batch ended", c.turnaround, calls, delay)
				if resp.Route != llmfleet.RouteBatch || calls > int64(c.maxCalls) || delay > c.maxDelay {
					t.Errorf("calls %d (max %d), delay %s (max %s)", calls, c.maxCalls, delay, c.maxDelay)
				}
			})
		})
	}
}
