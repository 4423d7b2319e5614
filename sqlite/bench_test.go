package sqlite_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/llmfleet/llmfleet/sqlite"
	"github.com/llmfleet/llmfleet/storetest"
)

// BenchmarkAddRequest measures how many requests per second the durable
// path accepts (storetest.BenchAdd), each call returning once its row is
// committed and fsynced (synchronous=FULL).
func BenchmarkAddRequest(b *testing.B) {
	for _, callers := range []int{1, 16, 128} {
		b.Run(fmt.Sprintf("callers=%d", callers), func(b *testing.B) {
			benchAdd(b, callers, "")
		})
	}
	b.Run("callers=128/synchronous=NORMAL", func(b *testing.B) { benchAdd(b, 128, "NORMAL") })
}

func benchAdd(b *testing.B, callers int, syncMode string) {
	d := &sqlite.DB{Path: filepath.Join(b.TempDir(), "bench.db"), Synchronous: syncMode}
	if err := d.Open(b.Context()); err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	storetest.BenchAdd(b, d, callers)
}

// BenchmarkCompleteRequests measures storing the results of a batch of
// 1,000 requests, with their ledger entries, in one CompleteRequests
// (storetest.BenchComplete).
func BenchmarkCompleteRequests(b *testing.B) {
	d := &sqlite.DB{Path: filepath.Join(b.TempDir(), "bench.db")}
	if err := d.Open(b.Context()); err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	storetest.BenchComplete(b, d, 1000)
}
