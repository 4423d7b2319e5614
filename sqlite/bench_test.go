package sqlite_test

import (
	"bytes"
	"fmt"
	"net/http"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/sqlite"
)

// benchBody is a realistic create-message body of about 1.5 KB.
var benchBody = []byte(fmt.Sprintf(`{"model":"claude-sonnet-4-6","max_tokens":1024,"system":"You are a careful code reviewer.",`+
	`"messages":[{"role":"user","content":%q}]}`, bytes.Repeat([]byte("Review this function for bugs. "), 45)))

// BenchmarkAddRequest measures how many requests per second the durable
// path accepts: concurrent AddRequest calls, each returning once its row
// is committed and fsynced (synchronous=FULL), as many agents' requests
// arriving at the proxy at once.
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
	header := http.Header{"Anthropic-Version": {"2023-06-01"}}
	now := time.Now()
	var n atomic.Int64
	b.SetBytes(int64(len(benchBody)))
	b.SetParallelism((callers + 1) / 2) // GOMAXPROCS × this many goroutines
	if callers == 1 {
		b.SetParallelism(1)
	}
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			r := &llmfleet.StoredRequest{
				ID: fmt.Sprintf("lfr_%012d", i), Provider: "anthropic", CredentialID: "cred_0123456789abcdef01234567",
				Header: header, Body: benchBody, Model: "claude-sonnet-4-6", Budget: time.Hour,
				AcceptedAt: now, Deadline: now.Add(time.Hour),
			}
			if err := d.AddRequest(b.Context(), r); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
}
