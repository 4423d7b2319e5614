package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// pooledTransport is an upstream transport that keeps enough idle
// connections for the benchmark's callers.
func pooledTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 1024
	t.MaxIdleConnsPerHost = 256
	return t
}

// serveLoopback serves h on a fresh loopback port and returns its base URL
// and a function that stops it.
func serveLoopback(h http.Handler) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: time.Minute}
	done := make(chan struct{})
	go func() {
		defer close(done)
		hs.Serve(ln)
	}()
	return "http://" + ln.Addr().String(), func() {
		hs.Close()
		<-done
	}, nil
}

// load is what one run of runLoad saw.
type load struct {
	lat      []time.Duration // of the successful calls
	failed   int
	firstErr error // of the failed calls
}

// caller posts body to a target's URLs in turn.
type caller struct {
	ctx       context.Context
	client    *http.Client
	t         benchTarget
	urls      []string
	turn      atomic.Uint64
	body      string
	firstByte bool // latency to the first byte of the answer, not its end
}

// call makes one call and returns its latency.
func (c *caller) call() (time.Duration, error) {
	base := c.urls[(c.turn.Add(1)-1)%uint64(len(c.urls))]
	req, err := http.NewRequestWithContext(c.ctx, http.MethodPost, base+"/v1/messages", strings.NewReader(c.body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Api-Key", "sk-bench")
	req.Header.Set("Anthropic-Version", "2023-06-01")
	for k, v := range c.t.hdr {
		req.Header.Set(k, v)
	}
	start := time.Now()
	resp, err := c.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var lat time.Duration
	if c.firstByte {
		var b [1]byte
		if _, err := io.ReadFull(resp.Body, b[:]); err != nil {
			return 0, err
		}
		lat = time.Since(start)
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return 0, err
	}
	if !c.firstByte {
		lat = time.Since(start)
	}
	if resp.StatusCode/100 != 2 { // 202 for an accepted async request
		return 0, fmt.Errorf("status %d", resp.StatusCode)
	}
	return lat, nil
}

// runLoad runs conc callers against t for d, after a warm-up of one call
// per caller.
func runLoad(ctx context.Context, t benchTarget, conc int, d time.Duration, body string, firstByte bool) (*load, error) {
	// HTTP/2 where a TLS target offers it (the upstream called directly),
	// as the proxies call it.
	tr := &http.Transport{MaxIdleConnsPerHost: conc, DisableCompression: true, ForceAttemptHTTP2: true}
	defer tr.CloseIdleConnections()
	c := &caller{ctx: ctx, client: &http.Client{Transport: tr}, t: t, urls: append([]string{t.url}, t.more...), body: body, firstByte: firstByte}
	// Warm up: open the connections (ours and the proxies' upstream ones).
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() { c.call() })
	}
	wg.Wait()

	var mu sync.Mutex
	out := &load{}
	deadline := time.Now().Add(d)
	for range conc {
		wg.Go(func() {
			lat := make([]time.Duration, 0, 1024)
			nerr := 0
			var firstErr error
			for time.Now().Before(deadline) && ctx.Err() == nil {
				l, err := c.call()
				if err != nil {
					if nerr == 0 && ctx.Err() == nil {
						firstErr = err
					}
					nerr++
					continue
				}
				lat = append(lat, l)
			}
			mu.Lock()
			out.lat = append(out.lat, lat...)
			out.failed += nerr
			if out.firstErr == nil {
				out.firstErr = firstErr
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(out.lat) == 0 {
		return nil, fmt.Errorf("every request failed: %v", out.firstErr)
	}
	return out, nil
}

// pct returns the p-quantile of sorted s.
func pct(s []time.Duration, p float64) time.Duration {
	if len(s) == 0 {
		return 0
	}
	i := int(p*float64(len(s))+0.5) - 1
	return s[max(0, min(i, len(s)-1))]
}

// micros is d in microseconds, to the hundredth.
func micros(d time.Duration) float64 { return round2(float64(d) / float64(time.Microsecond)) }

// round2 rounds f to the hundredth, halves away from zero.
func round2(f float64) float64 { return float64(int64(f*100+0.5*sign(f))) / 100 }

// sign is -1 for a negative f, else 1.
func sign(f float64) float64 {
	if f < 0 {
		return -1
	}
	return 1
}

// us formats microseconds for the table.
func us(v float64) string {
	if v >= 1000 {
		return fmt.Sprintf("%.2fms", v/1000)
	}
	return fmt.Sprintf("%.0fµs", v)
}

// signedUS formats an added latency, blank for the baseline itself.
func signedUS(v float64, base bool) string {
	if base {
		return "-"
	}
	if v < 0 {
		return "-" + us(-v)
	}
	return "+" + us(v)
}
