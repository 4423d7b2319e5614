package proxy_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/llmfleet/llmfleet/proxy"
)

// These tests check what the Server's default transport (a pooled
// http.Transport) does for the sync route to a plain-HTTP upstream, the
// emulators' case: connections are kept and reused, a caller that leaves
// does not leave its connection to the next one, many callers at once
// each get their own answer.
//
// An HTTP/1.1 upstream that sends more than its answer's framing says is
// not covered: http.Transport drops such a connection when it sees the
// extra bytes on it idle, but a call that takes the connection first reads
// them as its answer. No provider does so, and over HTTPS (HTTP/2, every
// provider) answers are framed per stream.

// connsUpstream is an upstream on loopback that counts the connections
// it accepted.
func connsUpstream(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &conns
}

// proxyTo serves a Server with the default transport in front of base.
func proxyTo(t *testing.T, base string) string {
	t.Helper()
	u, _ := url.Parse(base)
	p := httptest.NewServer((&proxy.Server{Upstream: u}).Handler())
	t.Cleanup(p.Close)
	return p.URL
}

// echoAnswer answers with the request's method, path and body.
func echoAnswer(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	w.Header().Set("Content-Type", "text/plain")
	fmt.Fprintf(w, "%s %s %s", r.Method, r.URL.Path, b)
}

// postText posts body to url and returns the answer's body.
func postText(t *testing.T, url, body string) string {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestTransportKeepsConnection(t *testing.T) {
	up, conns := connsUpstream(t, echoAnswer)
	base := proxyTo(t, up.URL)
	for i := range 5 {
		if got, want := postText(t, base+"/v1/messages", fmt.Sprint("call ", i)), fmt.Sprint("POST /v1/messages call ", i); got != want {
			t.Fatalf("answer %q, want %q", got, want)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d upstream connections for 5 calls one after the other, want 1", n)
	}
}

// A streaming caller that leaves before the end: the upstream sees its
// connection closed, and the next call is answered on another one.
func TestTransportCallerLeavesStream(t *testing.T) {
	gone := make(chan struct{})
	up, conns := connsUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/stream" {
			echoAnswer(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for {
			if _, err := io.WriteString(w, "data: more\n\n"); err != nil {
				close(gone)
				return
			}
			w.(http.Flusher).Flush()
		}
	})
	base := proxyTo(t, up.URL)
	resp, err := http.Post(base+"/v1/stream", "application/json", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(resp.Body, make([]byte, 30)); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	<-gone
	if got := postText(t, base+"/v1/next", "y"); got != "POST /v1/next y" {
		t.Fatalf("next answer %q", got)
	}
	if n := conns.Load(); n != 2 {
		t.Errorf("%d upstream connections, want 2: the one left mid-stream is not used again", n)
	}
}

// Many callers at once each get their own answer.
func TestTransportConcurrent(t *testing.T) {
	up, conns := connsUpstream(t, echoAnswer)
	base := proxyTo(t, up.URL)
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := range 25 {
				body := fmt.Sprintf("caller %d call %d", g, i)
				if got := postText(t, base+"/v1/x", body); got != "POST /v1/x "+body {
					t.Errorf("answer %q to %q", got, body)
				}
			}
		})
	}
	wg.Wait()
	t.Logf("%d upstream connections for 400 calls of 16 callers", conns.Load())
}
