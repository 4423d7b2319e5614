package storetest

import (
	"bytes"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
)

// BenchBody is a realistic create-message body of about 1.5 KB, the body
// of the requests BenchAdd adds.
var BenchBody = []byte(fmt.Sprintf(`{"model":"claude-sonnet-4-6","max_tokens":1024,"system":"You are a careful code reviewer.",`+
	`"messages":[{"role":"user","content":%q}]}`, bytes.Repeat([]byte("Review this function for bugs. "), 45)))

// BenchAdd measures how many requests per second s accepts durably:
// callers concurrent AddRequest calls, each returning once its request is
// committed, as many agents' requests arriving at the proxy at once. It
// reports req/s and the p99 of one call.
func BenchAdd(b *testing.B, s llmfleet.Store, callers int) {
	header := http.Header{"Anthropic-Version": {"2023-06-01"}}
	now := time.Now()
	prefix := fmt.Sprintf("lfr_%d_", now.UnixNano())
	var n atomic.Int64
	lat := make([]time.Duration, b.N+callers)
	b.SetBytes(int64(len(BenchBody)))
	b.SetParallelism((callers + 1) / 2) // GOMAXPROCS (2 here) × this many goroutines
	if callers == 1 {
		b.SetParallelism(1)
	}
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			r := &llmfleet.StoredRequest{
				ID: fmt.Sprintf("%s%012d", prefix, i), Provider: "anthropic", CredentialID: "cred_0123456789abcdef01234567",
				Header: header, Body: BenchBody, Model: "claude-sonnet-4-6", Budget: time.Hour,
				AcceptedAt: now, Deadline: now.Add(time.Hour),
			}
			start := time.Now()
			if err := s.AddRequest(b.Context(), r); err != nil {
				b.Error(err)
				return
			}
			if int(i) < len(lat) {
				lat[i] = time.Since(start)
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
	got := lat[1:min(int(n.Load())+1, len(lat))]
	if len(got) > 0 {
		slices.Sort(got)
		b.ReportMetric(float64(got[(len(got)*99)/100].Microseconds())/1000, "p99_ms")
	}
}

// BenchComplete measures storing the results of a batch of size requests
// in one CompleteRequests call, as the engine does when a batch ends, each
// with a result of BenchBody's size and a ledger entry; the requests are
// accepted outside the timing. It reports the batch's time and results per
// second.
func BenchComplete(b *testing.B, s llmfleet.Store, size int) {
	now := time.Now()
	res := &llmfleet.StoredResult{StatusCode: 200, Body: BenchBody, CompletedAt: now,
		Usage: llmfleet.Usage{InputTokens: 1200, OutputTokens: 300}}
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		rs := make([]*llmfleet.StoredRequest, size)
		done := make([]llmfleet.Completion, size)
		for k := range rs {
			id := fmt.Sprintf("lfr_%d_%d_%06d", now.UnixNano(), i, k)
			rs[k] = &llmfleet.StoredRequest{ID: id, Provider: "anthropic", CredentialID: "cred_0123456789abcdef01234567",
				Body: BenchBody, Model: "claude-sonnet-4-6", AcceptedAt: now}
			done[k] = llmfleet.Completion{RequestID: id, Result: res, Ledger: &llmfleet.LedgerEntry{Time: now,
				Provider: "anthropic", Model: "claude-sonnet-4-6", Route: llmfleet.RouteBatch, Outcome: "ok", Usage: res.Usage}}
		}
		var wg sync.WaitGroup
		for _, r := range rs { // at once, so that they are committed in groups
			wg.Go(func() {
				if err := s.AddRequest(b.Context(), r); err != nil {
					b.Error(err)
				}
			})
		}
		wg.Wait()
		b.StartTimer()
		if _, err := s.CompleteRequests(b.Context(), done); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*size)/b.Elapsed().Seconds(), "results/s")
}
