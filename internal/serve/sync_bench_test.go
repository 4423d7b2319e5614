package serve

import (
	"context"
	"crypto/tls"
	"io"
	"log"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"regexp"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet/cachesim"
	"github.com/llmfleet/llmfleet/dispatch"
	"github.com/llmfleet/llmfleet/emulator"
	"github.com/llmfleet/llmfleet/internal/servestate"
)

// The sync path in one process, for allocations and pprof: a caller posts
// one create-message call after another to serve (its ledger, metrics,
// usage tap and access log on) or to a bare httputil.ReverseProxy, both in
// front of the emulator over TLS and HTTP/2. Every figure counts the
// caller and the upstream too, which are the same for both: the
// difference between the two is what serve adds. Compare allocations and
// profiles here: the time per call mixes the three parties on the same
// processors, unlike the deployment, where each proxy is a process of its
// own (measure that with llmfleet-bench).
//
//	go test -run '^$' -bench Sync -benchmem ./internal/serve
//	go test -run '^$' -bench SyncServe -cpuprofile cpu.out ./internal/serve && go tool pprof -top -focus proxy cpu.out
//	go test -run '^$' -bench SyncServe -memprofile mem.out ./internal/serve && go tool pprof -sample_index=alloc_objects -top mem.out

const syncBody = `{"model":"claude-haiku-4-5","max_tokens":64,"messages":[{"role":"user","content":"Benchmark: what is the capital of France?"}]}`

// tlsUpstream serves the emulator over TLS (HTTP/2 by ALPN) and makes
// http.DefaultTransport, which serve's transports clone, trust it.
func tlsUpstream(b *testing.B) *url.URL {
	cache := cachesim.Default()
	up := httptest.NewUnstartedServer(&emulator.Server{Turnaround: func(string, *rand.Rand) time.Duration { return time.Second }, Cache: &cache})
	up.EnableHTTP2 = true
	up.Config.ErrorLog = log.New(io.Discard, "", 0)
	up.StartTLS()
	b.Cleanup(up.Close)
	dt := http.DefaultTransport.(*http.Transport)
	old := dt.TLSClientConfig
	dt.TLSClientConfig = &tls.Config{RootCAs: up.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}
	b.Cleanup(func() { dt.TLSClientConfig = old })
	u, _ := url.Parse(up.URL)
	return u
}

// startServe runs serve on a free port until the benchmark ends and
// returns its base URL.
func startServe(b *testing.B, upstream *url.URL) string {
	dir := b.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	lines := &lineWriter{addr: make(chan string, 1)}
	done := make(chan error, 1)
	cfg := Config{
		Listen: "127.0.0.1:0", Upstream: upstream, OpenAIUpstream: upstream,
		Policy:          dispatch.Policy{}.WithDefaults(),
		UpstreamTimeout: 10 * time.Minute,
		State: servestate.Config{DB: filepath.Join(dir, "bench.db"), SecretFile: filepath.Join(dir, "secret"),
			Getenv: func(string) string { return "" }, Lease: 15 * time.Second},
		ShutdownTimeout: 5 * time.Second,
		// The access log formatted, as serve writes it, and dropped.
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	go func() { done <- Run(ctx, cfg, lines) }()
	var base string
	select {
	case base = <-lines.addr:
	case err := <-done:
		b.Fatal(err)
	}
	b.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			b.Error(err)
		}
	})
	return base
}

// lineWriter takes serve's startup line and sends on the address in it.
type lineWriter struct {
	once sync.Once
	addr chan string
}

var addrRE = regexp.MustCompile(`http://[0-9.:]+`)

func (w *lineWriter) Write(p []byte) (int, error) {
	if a := addrRE.Find(p); a != nil {
		w.once.Do(func() { w.addr <- string(a) })
	}
	return len(p), nil
}

// benchSync posts calls to base one after another.
func benchSync(b *testing.B, base string) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4, DisableCompression: true}}
	call := func() {
		req, _ := http.NewRequest(http.MethodPost, base+"/v1/messages", strings.NewReader(syncBody))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Api-Key", "sk-bench")
		req.Header.Set("Anthropic-Version", "2023-06-01")
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
	call() // the connections open
	b.ReportAllocs()
	before := goroutinesCreated()
	b.ResetTimer()
	for b.Loop() {
		call()
	}
	b.ReportMetric(float64(goroutinesCreated()-before)/float64(b.N), "goroutines/op")
}

// goroutinesCreated is how many goroutines this process has started.
func goroutinesCreated() uint64 {
	s := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// bufferPool is the bare proxy's pool of 32 KiB copy buffers, as
// llmfleet-bench's bare proxy has.
type bufferPool struct{ p sync.Pool }

func (bp *bufferPool) Get() []byte {
	if v, ok := bp.p.Get().(*[32 << 10]byte); ok {
		return v[:]
	}
	return new([32 << 10]byte)[:]
}

func (bp *bufferPool) Put(buf []byte) {
	if cap(buf) >= 32<<10 {
		bp.p.Put((*[32 << 10]byte)(buf[:32<<10]))
	}
}

func BenchmarkSyncServe(b *testing.B) {
	benchSync(b, startServe(b, tlsUpstream(b)))
}

func BenchmarkSyncBare(b *testing.B) {
	up := tlsUpstream(b)
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 256
	rp := &httputil.ReverseProxy{
		Rewrite:    func(pr *httputil.ProxyRequest) { pr.SetURL(up) },
		Transport:  t,
		BufferPool: &bufferPool{},
		ErrorLog:   log.New(io.Discard, "", 0),
	}
	srv := httptest.NewServer(rp)
	b.Cleanup(srv.Close)
	benchSync(b, srv.URL)
}
