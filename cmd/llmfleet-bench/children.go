package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

// headerFlags collects repeated "Name: value" flags.
type headerFlags map[string]string

func (h headerFlags) String() string { return fmt.Sprint(map[string]string(h)) }

func (h headerFlags) Set(v string) error {
	k, val, ok := strings.Cut(v, ":")
	if !ok {
		return fmt.Errorf("%q is not Name: value", v)
	}
	h[strings.TrimSpace(k)] = strings.TrimSpace(val)
	return nil
}

// runLoadClient is the load process of llmfleet-bench: conc callers post
// benchBody to --url for --duration, after a warm-up, and it prints one
// loadResult as JSON.
func runLoadClient(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("llmfleet-bench "+loadCommand, flag.ContinueOnError)
	fs.SetOutput(stderr)
	base := fs.String("url", "", "base URL of the target; several, comma-separated, take the calls in turn (replicas behind a round-robin balancer)")
	conc := fs.Int("concurrency", 1, "concurrent callers")
	d := fs.Duration("duration", time.Second, "how long to call")
	hdr := headerFlags{}
	fs.Var(hdr, "header", "a header to send, Name: value (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	urls := strings.Split(*base, ",")
	for _, s := range urls {
		if u, err := url.Parse(s); err != nil || u.Host == "" || *conc < 1 {
			return fmt.Errorf("--url %q is not a base URL, or --concurrency is not positive", s)
		}
	}
	l, err := runLoad(ctx, benchTarget{url: urls[0], more: urls[1:], hdr: hdr}, *conc, *d, benchBody, false)
	if err != nil {
		return err
	}
	slices.Sort(l.lat)
	r := loadResult{
		Requests: len(l.lat), Errors: l.failed,
		P50us: micros(pct(l.lat, 0.50)), P99us: micros(pct(l.lat, 0.99)),
		RPS:    round2(float64(len(l.lat)+l.failed) / d.Seconds()),
		Warmup: *conc,
	}
	if l.firstErr != nil {
		r.FirstError = l.firstErr.Error()
	}
	return json.NewEncoder(stdout).Encode(r)
}

// runBareProxy is the bare reverse proxy of llmfleet-bench: an
// httputil.ReverseProxy to --upstream with a pooled upstream transport
// (HTTP/2 to a TLS upstream, by ALPN) and a buffer pool, as a careful
// operator would run one, plus GET /readyz.
func runBareProxy(ctx context.Context, args []string, _, stderr io.Writer) error {
	fs := flag.NewFlagSet("llmfleet-bench "+bareProxyCommand, flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:0", "address to listen on")
	upstream := fs.String("upstream", "", "base URL of the upstream")
	if err := fs.Parse(args); err != nil {
		return err
	}
	up, err := url.Parse(*upstream)
	if err != nil || up.Host == "" {
		return fmt.Errorf("--upstream %q is not a base URL", *upstream)
	}
	rp := &httputil.ReverseProxy{
		Rewrite:    func(pr *httputil.ProxyRequest) { pr.SetURL(up) },
		Transport:  pooledTransport(),
		BufferPool: &benchBufferPool{},
		ErrorLog:   log.New(io.Discard, "", 0),
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })
	mux.Handle("/", rp)
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: time.Minute}
	go func() {
		<-ctx.Done()
		hs.Close()
	}()
	if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// benchBufferPool is the bare proxy's pool of 32 KiB copy buffers.
type benchBufferPool struct{ p sync.Pool }

func (b *benchBufferPool) Get() []byte {
	if v, ok := b.p.Get().(*[32 << 10]byte); ok {
		return v[:]
	}
	return new([32 << 10]byte)[:]
}

func (b *benchBufferPool) Put(buf []byte) {
	if cap(buf) >= 32<<10 {
		b.p.Put((*[32 << 10]byte)(buf[:32<<10]))
	}
}
