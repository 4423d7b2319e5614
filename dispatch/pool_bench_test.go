package dispatch

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
)

// BenchmarkPoolJoin measures a request joining a pool that holds many:
// the cost must not grow with the pool (go test -bench PoolJoin
// ./dispatch; ns/op at 1k and 50k pooled should be alike).
func BenchmarkPoolJoin(b *testing.B) {
	for _, held := range []int{1000, 50000} {
		b.Run(fmt.Sprintf("pooled-%d", held), func(b *testing.B) {
			f := newFake()
			f.maxReq = 1 << 20
			d := &Dispatcher{Providers: []llmfleet.Provider{f},
				Policy: Policy{BatchWindow: time.Hour, BatchMinSize: 1 << 20, BatchMaxSize: 1 << 20}}
			if err := d.Open(); err != nil {
				b.Fatal(err)
			}
			defer func() {
				d.mu.Lock()
				for _, p := range d.pools.m {
					p.stopTimer()
				}
				d.closed = true
				d.mu.Unlock()
			}()
			ctx := context.Background()
			done := func(*llmfleet.Response, error) {}
			for i := range held {
				if err := d.SubmitBatchFunc(ctx, time.Hour, req("k", fmt.Sprint("pooled ", i)), done); err != nil {
					b.Fatal(err)
				}
			}
			reqs := make([]*llmfleet.Request, b.N)
			for i := range reqs {
				reqs[i] = req("k", fmt.Sprint("joining ", i))
			}
			b.ResetTimer()
			for i := range b.N {
				if err := d.SubmitBatchFunc(ctx, time.Hour, reqs[i], done); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
