package dispatch

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmfleet/llmfleet"
)

// TestPollingCost measures, in virtual time, how long after its batch's
// end a result reaches its caller and how many management calls the batch
// costs, for batches that end well before, near and long after the
// prediction (the 120s prior): the result comes within one poll interval
// of the end, whatever the prediction, at one call per poll interval.
func TestPollingCost(t *testing.T) {
	const poll = 5 * time.Second
	for _, c := range []struct {
		name       string
		turnaround time.Duration
	}{
		{"ends early (20s, prior 120s)", 20 * time.Second},
		{"ends near the prior (110s)", 110 * time.Second},
		{"ends late (30m)", 30 * time.Minute},
		{"ends very late (6h)", 6 * time.Hour},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFake()
				f.turnaround = func(string) time.Duration { return c.turnaround }
				d := open(t, f, Policy{BatchMinSize: 1, PollInterval: poll})
				start := time.Now()
				resp, err := d.SubmitBatch(t.Context(), 0, req("k", "x"))
				if err != nil {
					t.Fatal(err)
				}
				delay := time.Since(start) - c.turnaround
				calls := d.Stats().ManagementCalls
				maxCalls := int64(c.turnaround/poll) + 3 // create, polls, results
				t.Logf("turnaround %s: result %s after the batch ended, %d management calls", c.turnaround, delay, calls)
				if resp.Route != llmfleet.RouteBatch || delay > poll || calls > maxCalls {
					t.Errorf("delay %s (max %s), calls %d (max %d)", delay, poll, calls, maxCalls)
				}
			})
		})
	}
}
