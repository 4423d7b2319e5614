package proxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/textproto"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// connsServer is an upstream on loopback that counts the connections it
// accepted.
func connsServer(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int32) {
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

// rawUpstream is an upstream on loopback that hands each connection it
// accepts, with a reader of it, to serve, and closes it after; it returns
// the upstream's base URL.
func rawUpstream(t *testing.T, serve func(c net.Conn, br *bufio.Reader)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			serve(c, bufio.NewReader(c))
			c.Close()
		}
	}()
	return "http://" + ln.Addr().String()
}

func newConnTransport() *connTransport {
	return &connTransport{Next: http.DefaultTransport.(*http.Transport).Clone()}
}

// send posts body to url through rt and returns the answer's body.
func send(t *testing.T, rt http.RoundTripper, url, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatalf("RoundTrip: %v", err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	return resp, string(b)
}

func echo(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	w.Header().Set("Content-Type", "text/plain")
	fmt.Fprintf(w, "%s %s %s", r.Method, r.URL.Path, b)
}

func TestConnTransportKeepsConnection(t *testing.T) {
	srv, conns := connsServer(t, echo)
	rt := newConnTransport()
	for i := range 5 {
		_, got := send(t, rt, srv.URL+"/v1/messages", fmt.Sprint("call ", i))
		if want := fmt.Sprint("POST /v1/messages call ", i); got != want {
			t.Fatalf("answer %q, want %q", got, want)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections for 5 calls one after the other, want 1", n)
	}
}

func TestConnTransportChunkedAnswerWithTrailer(t *testing.T) {
	srv, conns := connsServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Trailer", "X-Total")
		for i := range 3 {
			fmt.Fprintf(w, "event %d\n", i)
			w.(http.Flusher).Flush()
		}
		w.Header().Set("X-Total", "3")
	})
	rt := newConnTransport()
	for range 2 {
		resp, got := send(t, rt, srv.URL, "x")
		if got != "event 0\nevent 1\nevent 2\n" || resp.Trailer.Get("X-Total") != "3" {
			t.Fatalf("answer %q, trailer %q", got, resp.Trailer)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections, want 1: a chunked answer read to its end gives its connection back", n)
	}
}

// An upstream that closes a keep-alive connection while it is idle: the
// next call goes on a new connection, as if nothing happened.
func TestConnTransportUpstreamClosedIdle(t *testing.T) {
	closed := make(chan struct{})
	url := rawUpstream(t, func(c net.Conn, br *bufio.Reader) {
		if req, err := http.ReadRequest(br); err == nil {
			b, _ := io.ReadAll(req.Body)
			fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(b), b)
		}
		c.Close() // no Connection: close said
		closed <- struct{}{}
	})
	rt := newConnTransport()
	for i := range 3 {
		_, got := send(t, rt, url+"/", fmt.Sprint("call ", i))
		if want := fmt.Sprint("call ", i); got != want {
			t.Fatalf("answer %q, want %q", got, want)
		}
		<-closed
	}
}

// A caller that gives up while the upstream has not answered: RoundTrip
// returns at once with the context's error and the connection is closed.
func TestConnTransportCallerGivesUp(t *testing.T) {
	arrived, gone := make(chan struct{}), make(chan struct{})
	srv, conns := connsServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			io.ReadAll(r.Body) // net/http watches the connection once the body is read
			close(arrived)
			<-r.Context().Done()
			close(gone)
			return
		}
		echo(w, r)
	})
	rt := newConnTransport()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/slow", strings.NewReader("x"))
	errc := make(chan error, 1)
	go func() {
		_, err := rt.RoundTrip(req)
		errc <- err
	}()
	<-arrived
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("RoundTrip: %v, want context.Canceled", err)
	}
	<-gone // the upstream saw its connection closed
	nextOnNewConn(t, rt, srv.URL, conns)
}

// nextOnNewConn checks that a call after the first, whose connection was
// not to be used again, is answered on a second connection.
func nextOnNewConn(t *testing.T, rt http.RoundTripper, base string, conns *atomic.Int32) {
	t.Helper()
	if _, got := send(t, rt, base+"/next", "y"); got != "POST /next y" {
		t.Fatalf("next answer %q", got)
	}
	if n := conns.Load(); n != 2 {
		t.Errorf("%d connections, want 2: the first is not used again", n)
	}
}

// A body closed before its end (a streaming caller that left) closes its
// connection: its rest is never read as the next answer.
func TestConnTransportBodyClosedEarly(t *testing.T) {
	srv, conns := connsServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/stream" {
			echo(w, r)
			return
		}
		for r.Context().Err() == nil { // until the connection is closed
			if _, err := io.WriteString(w, "data: more\n\n"); err != nil {
				return
			}
			w.(http.Flusher).Flush()
		}
	})
	rt := newConnTransport()
	req, _ := http.NewRequest("POST", srv.URL+"/stream", strings.NewReader("x"))
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(resp.Body, make([]byte, 30)); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if _, err := resp.Body.Read(make([]byte, 1)); !errors.Is(err, http.ErrBodyReadAfterClose) {
		t.Errorf("read after Close: %v", err)
	}
	nextOnNewConn(t, rt, srv.URL, conns)
}

// Informational answers go to the request's trace (ReverseProxy passes
// them on to its caller) and the final answer is returned.
func TestConnTransportEarlyHints(t *testing.T) {
	srv, _ := connsServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", "</a.css>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		echo(w, r)
	})
	var hints []string
	trace := &httptrace.ClientTrace{Got1xxResponse: func(code int, h textproto.MIMEHeader) error {
		hints = append(hints, fmt.Sprint(code, " ", h.Get("Link")))
		return nil
	}}
	req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), "POST", srv.URL+"/", strings.NewReader("x"))
	resp, err := newConnTransport().RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != "POST / x" || len(hints) != 1 || hints[0] != "103 </a.css>; rel=preload" {
		t.Fatalf("status %d, body %q, hints %q", resp.StatusCode, b, hints)
	}
}

// What connTransport does not carry itself goes to Next: https, a host
// reached through a proxy, upgrades, Expect: 100-continue, bodies of
// unknown length or over directMaxBody.
func TestConnTransportHandsOn(t *testing.T) {
	srv, _ := connsServer(t, echo)
	tls := httptest.NewTLSServer(http.HandlerFunc(echo))
	defer tls.Close()
	viaProxy, _ := connsServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "proxied "+r.URL.String())
	})
	proxied := "http://upstream.invalid/v1/messages"
	next := tls.Client().Transport.(*http.Transport).Clone()
	next.Proxy = func(r *http.Request) (*url.URL, error) {
		if r.URL.Host == "upstream.invalid" {
			return url.Parse(viaProxy.URL)
		}
		return nil, nil
	}
	rt := &connTransport{Next: next}
	cases := []struct {
		name, url string
		edit      func(*http.Request)
		want      string
	}{
		{"plain", srv.URL + "/a", nil, "POST /a x"},
		{"https", tls.URL + "/b", nil, "POST /b x"},
		{"proxy", proxied, nil, "proxied " + proxied},
		{"upgrade", srv.URL + "/c", func(r *http.Request) { r.Header.Set("Upgrade", "websocket") }, "POST /c x"},
		{"expect", srv.URL + "/d", func(r *http.Request) { r.Header.Set("Expect", "100-continue") }, "POST /d x"},
		{"unknown length", srv.URL + "/e", func(r *http.Request) { r.ContentLength = -1 }, "POST /e x"},
		{"large body", srv.URL + "/f", func(r *http.Request) {
			r.Body = io.NopCloser(strings.NewReader(strings.Repeat("x", directMaxBody+1)))
			r.ContentLength = directMaxBody + 1
		}, "POST /f " + strings.Repeat("x", directMaxBody+1)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			gotConn := false // http.Transport reports its connections; connTransport does not
			ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
				GotConn: func(httptrace.GotConnInfo) { gotConn = true },
			})
			req, _ := http.NewRequestWithContext(ctx, "POST", c.url, strings.NewReader("x"))
			if c.edit != nil {
				c.edit(req)
			}
			resp, err := rt.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(b) != c.want {
				t.Errorf("answer %.40q, want %.40q", b, c.want)
			}
			if wantNext := c.name != "plain"; gotConn != wantNext {
				t.Errorf("sent by Next: %v, want %v", gotConn, wantNext)
			}
		})
	}
}

// An answer whose header does not end within maxHeaderBytes is an error,
// not a read without end.
func TestConnTransportHeaderTooLarge(t *testing.T) {
	url := rawUpstream(t, func(c net.Conn, br *bufio.Reader) {
		http.ReadRequest(br)
		io.WriteString(c, "HTTP/1.1 200 OK\r\nX-Long: ")
		chunk := strings.Repeat("a", 64<<10)
		for range maxHeaderBytes/len(chunk) + 2 {
			if _, err := io.WriteString(c, chunk); err != nil {
				return
			}
		}
	})
	req, _ := http.NewRequest("POST", url+"/", strings.NewReader("x"))
	if _, err := newConnTransport().RoundTrip(req); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("RoundTrip: %v, want the header limit's error", err)
	}
}

// An upstream that answers before it read the body, and closes.
func TestConnTransportAnswerBeforeBody(t *testing.T) {
	url := rawUpstream(t, func(c net.Conn, br *bufio.Reader) {
		if _, err := http.ReadRequest(br); err != nil { // the header only
			return
		}
		io.WriteString(c, "HTTP/1.1 413 Request Entity Too Large\r\nConnection: close\r\nContent-Length: 8\r\n\r\ntoo long")
		c.(*net.TCPConn).CloseWrite()
		io.Copy(io.Discard, br) // as net/http does before it closes
	})
	_, got := send(t, newConnTransport(), url+"/", strings.Repeat("x", 512<<10))
	if got != "too long" {
		t.Fatalf("answer %q", got)
	}
}

// Connections idle longer than IdleTimeout, by the transport's clock, are
// closed rather than used.
func TestConnTransportIdleTimeout(t *testing.T) {
	srv, conns := connsServer(t, echo)
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	rt := newConnTransport()
	rt.Now = func() time.Time { return now }
	send(t, rt, srv.URL, "a")
	now = now.Add(89 * time.Second)
	send(t, rt, srv.URL, "b")
	if n := conns.Load(); n != 1 {
		t.Fatalf("%d connections after 89s idle, want 1", n)
	}
	now = now.Add(91 * time.Second)
	send(t, rt, srv.URL, "c")
	if n := conns.Load(); n != 2 {
		t.Fatalf("%d connections after 91s idle, want 2", n)
	}
}

// Many callers at once each get their own answer.
func TestConnTransportConcurrent(t *testing.T) {
	srv, conns := connsServer(t, echo)
	rt := newConnTransport()
	rt.MaxIdlePerHost = 4
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := range 25 {
				body := fmt.Sprintf("caller %d call %d", g, i)
				req, _ := http.NewRequest("POST", srv.URL+"/x", strings.NewReader(body))
				resp, err := rt.RoundTrip(req)
				if err != nil {
					t.Error(err)
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if string(b) != "POST /x "+body {
					t.Errorf("answer %q to %q", b, body)
				}
			}
		})
	}
	wg.Wait()
	rt.CloseIdleConnections()
	t.Logf("%d connections for 400 calls of 16 callers", conns.Load())
}

// keepAliveUpstream is an upstream on loopback that reads requests one
// after the other on each connection and writes, for the i-th request
// overall (from 1), the raw bytes answer gives; it returns the base URL.
func keepAliveUpstream(t *testing.T, answer func(i int, req *http.Request) string) string {
	t.Helper()
	var n atomic.Int32
	return rawUpstream(t, func(c net.Conn, br *bufio.Reader) {
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			io.Copy(io.Discard, req.Body)
			if _, err := io.WriteString(c, answer(int(n.Add(1)), req)); err != nil {
				return
			}
		}
	})
}

// An upstream that sends more than its answer's framing says: what is
// left is never read as the next caller's answer (found by review: the
// connection went back to the pool with those bytes buffered, and every
// caller after got the answer of the one before).
func TestConnTransportLeftoverBytes(t *testing.T) {
	answer := func(body string) string {
		return fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	}
	cases := map[string]func(i int, req *http.Request) string{
		"a second answer": func(i int, req *http.Request) string {
			if i == 1 {
				return answer("answer to "+req.URL.Path) + answer("answer to /somebody")
			}
			return answer("answer to " + req.URL.Path)
		},
		"a 204 with a body": func(i int, req *http.Request) string {
			if i == 1 {
				return "HTTP/1.1 204 No Content\r\nContent-Length: 2\r\n\r\n{}"
			}
			return answer("answer to " + req.URL.Path)
		},
	}
	for name, upstream := range cases {
		t.Run(name, func(t *testing.T) {
			url := keepAliveUpstream(t, upstream)
			rt := newConnTransport()
			send(t, rt, url+"/alice", "x")
			for _, who := range []string{"bob", "carol"} {
				if _, got := send(t, rt, url+"/"+who, "y"); got != "answer to /"+who {
					t.Errorf("%s got %q", who, got)
				}
			}
		})
	}
}

// failingConn fails its writes, sending nothing, once fail is set.
type failingConn struct {
	net.Conn
	fail *atomic.Bool
}

func (c failingConn) Write(p []byte) (int, error) {
	if c.fail.CompareAndSwap(true, false) {
		return 0, errors.New("broken pipe (injected)")
	}
	return c.Conn.Write(p)
}

// A write on a reused connection that fails before a byte left: the call
// goes again on a new connection if its body can be given again, and
// fails, sent nowhere, if not. The upstream never sees a call twice.
func TestConnTransportNothingWritten(t *testing.T) {
	for _, rewindable := range []bool{true, false} {
		t.Run(fmt.Sprint("rewindable=", rewindable), func(t *testing.T) {
			var seen atomic.Int32
			srv, _ := connsServer(t, func(w http.ResponseWriter, r *http.Request) {
				seen.Add(1)
				echo(w, r)
			})
			var fail atomic.Bool
			rt := newConnTransport()
			dial := (&net.Dialer{}).DialContext
			rt.Next.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
				c, err := dial(ctx, network, addr)
				return failingConn{c, &fail}, err
			}
			send(t, rt, srv.URL+"/a", "x")
			fail.Store(true)
			req, _ := http.NewRequest("POST", srv.URL+"/b", strings.NewReader("y"))
			if !rewindable {
				req.GetBody = nil
			}
			resp, err := rt.RoundTrip(req)
			if rewindable {
				if err != nil {
					t.Fatalf("RoundTrip: %v", err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if string(b) != "POST /b y" {
					t.Errorf("answer %q", b)
				}
			} else if !errors.Is(err, errNothingWritten) {
				t.Fatalf("RoundTrip: %v, want errNothingWritten", err)
			}
			want := int32(1)
			if rewindable {
				want = 2
			}
			if n := seen.Load(); n != want {
				t.Errorf("upstream saw %d calls, want %d", n, want)
			}
		})
	}
}
