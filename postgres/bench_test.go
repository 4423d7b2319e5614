package postgres_test

import (
	"fmt"
	"testing"

	"github.com/llmfleet/llmfleet/postgres"
	"github.com/llmfleet/llmfleet/postgres/pgtest"
	"github.com/llmfleet/llmfleet/storetest"
)

// BenchmarkAddRequest measures how many requests per second the durable
// path accepts on PostgreSQL (storetest.BenchAdd): each call returns
// once its row is committed (synchronous_commit on, the server's
// default), from 1, 16 and 128 concurrent callers over as many
// connections (at most 64).
func BenchmarkAddRequest(b *testing.B) {
	for _, callers := range []int{1, 16, 128} {
		b.Run(fmt.Sprintf("callers=%d", callers), func(b *testing.B) {
			d := &postgres.DB{URL: pgtest.URL(b), MaxConns: min(callers, 64)}
			if err := d.Open(b.Context()); err != nil {
				b.Fatal(err)
			}
			defer d.Close()
			storetest.BenchAdd(b, d, callers)
		})
	}
}

// BenchmarkCompleteRequests measures storing the results of a batch of
// 1,000 requests, with their ledger entries, in one CompleteRequests
// (storetest.BenchComplete).
func BenchmarkCompleteRequests(b *testing.B) {
	d := &postgres.DB{URL: pgtest.URL(b)}
	if err := d.Open(b.Context()); err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	storetest.BenchComplete(b, d, 1000)
}
