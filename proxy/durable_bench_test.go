package proxy_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/claude"
	"github.com/llmfleet/llmfleet/dispatch"
	"github.com/llmfleet/llmfleet/proxy"
	"github.com/llmfleet/llmfleet/sqlite"
	"github.com/llmfleet/llmfleet/vault"
)

// BenchmarkDurableAccept measures how many requests per second the whole
// durable path of `llmfleet serve` accepts: POST /v1/messages with
// Prefer: respond-async over loopback HTTP, the batch route's checks, the
// dispatcher recording the request in SQLite (group commit, fsync per
// commit) and pooling it, and the 202. The pools never flush while it
// runs, so what is measured is acceptance alone.
func BenchmarkDurableAccept(b *testing.B) {
	for _, callers := range []int{1, 16, 128} {
		b.Run(fmt.Sprintf("callers=%d", callers), func(b *testing.B) { benchAccept(b, callers) })
	}
}

func benchAccept(b *testing.B, callers int) {
	quiet := slog.New(slog.DiscardHandler)
	dir := b.TempDir()
	db := &sqlite.DB{Path: filepath.Join(dir, "llmfleet.db"), Logger: quiet}
	if err := db.Open(b.Context()); err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	v, err := vault.Open(filepath.Join(dir, "secret"))
	if err != nil {
		b.Fatal(err)
	}
	// The upstream is never called: nothing flushes before Close.
	d := &dispatch.Dispatcher{
		Providers: []llmfleet.Provider{&claude.Provider{BaseURL: "http://127.0.0.1:1", Logger: quiet}},
		Policy:    dispatch.Policy{BatchWindow: time.Hour, BatchMinSize: 1 << 30, BatchMaxSize: 1 << 30},
		Logger:    quiet,
		Store:     db,
		Sealer:    v,
	}
	if err := d.Open(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // no waiting for batches: the creates fail at once
		d.Close(ctx)
	}()
	ts := httptest.NewServer((&proxy.Server{Submitter: d, Logger: quiet}).Handler())
	defer ts.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	body := []byte(fmt.Sprintf(`{"model":"claude-sonnet-4-6","max_tokens":1024,"messages":[{"role":"user","content":%q}]}`,
		bytes.Repeat([]byte("Review this function for bugs. "), 45)))

	var failed atomic.Int64
	b.SetBytes(int64(len(body)))
	b.SetParallelism(max(1, callers/runtime.GOMAXPROCS(0)))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req, _ := http.NewRequest("POST", ts.URL+"/v1/messages", bytes.NewReader(body))
			req.Header.Set("X-Api-Key", "sk-bench")
			req.Header.Set("Prefer", "respond-async")
			resp, err := client.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusAccepted {
				failed.Add(1)
			}
		}
	})
	b.StopTimer()
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d requests not accepted", n)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
}
