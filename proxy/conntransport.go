package proxy

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"sync"
	"sync/atomic"
	"time"
)

// connTransport is the sync route's transport to a plain-HTTP upstream:
// it writes a request and reads its answer's header on the goroutine that
// calls RoundTrip, over a pooled HTTP/1.1 keep-alive connection, and the
// answer's body is read by whoever reads the Response's Body. No goroutine
// of its own: http.Transport hands every request to a writing goroutine
// and every answer back from a reading one, three wake-ups per call that
// cost more than the call itself when the upstream is near (a sidecar,
// a local gateway, the emulator). The wire format is the standard
// library's (Request.Write, http.ReadResponse).
//
// What it does not carry goes to Next as it is: https (over the internet
// a few microseconds are nothing against the network's milliseconds, and
// Next speaks HTTP/2 there), requests that would go through a proxy
// (Next's Proxy), protocol upgrades, Expect: 100-continue, and bodies of
// unknown length or over directMaxBody, which Next writes while it reads
// the answer (an upstream may answer, 413 say, before it read them).
type connTransport struct {
	// Next carries what connTransport does not; it must not be nil.
	Next *http.Transport
	// MaxIdlePerHost is the number of idle connections kept per upstream
	// host; 0 means 256.
	MaxIdlePerHost int
	// IdleTimeout closes connections left idle longer; 0 means 90s, as
	// http.DefaultTransport's.
	IdleTimeout time.Duration
	// Now is the clock idle connections are timed by; nil means time.Now.
	Now func() time.Time

	mu    sync.Mutex
	hosts map[string]*connHost
}

// connHost is what connTransport keeps per upstream host.
type connHost struct {
	direct bool // false: the host's requests go through a proxy, to Next
	idle   []*upConn
}

// maxHeaderBytes bounds an answer's status line and header, as
// http.Transport's default.
const maxHeaderBytes = 10 << 20

// max1xx bounds the informational answers before the final one, as
// http.Transport does.
const max1xx = 5

// directMaxBody is the largest request body connTransport writes before
// it reads the answer: it fits the sockets' buffers, so the write does not
// wait for the upstream to read it.
const directMaxBody = 1 << 20

// errNothingWritten marks a write that failed before a byte of the
// request reached the connection.
var errNothingWritten = errors.New("upstream closed the connection before the request was sent")

// RoundTrip sends req and returns its answer.
func (t *connTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !directable(req) {
		return t.Next.RoundTrip(req)
	}
	addr := req.URL.Host
	if req.URL.Port() == "" {
		addr = net.JoinHostPort(req.URL.Hostname(), "80")
	}
	h := t.host(req, addr)
	if !h.direct {
		return t.Next.RoundTrip(req)
	}
	ctx := req.Context()
	for {
		c, reused, err := t.get(ctx, h, addr)
		if err != nil {
			closeBody(req)
			return nil, err
		}
		resp, err := c.roundTrip(t, req)
		if reused && errors.Is(err, errNothingWritten) {
			if again, ok := rewind(req); ok {
				req = again // the upstream closed it as it was taken
				continue
			}
		}
		return resp, err
	}
}

// directable reports whether req is one connTransport carries itself.
func directable(req *http.Request) bool {
	if req.URL.Scheme != "http" || req.Header.Get("Upgrade") != "" || req.Header.Get("Expect") != "" {
		return false
	}
	if req.Body == nil || req.Body == http.NoBody {
		return true
	}
	return req.ContentLength > 0 && req.ContentLength <= directMaxBody
}

// rewind returns req ready to be written again from its start, if it can
// be: it has no body, or GetBody gives it again.
func rewind(req *http.Request) (*http.Request, bool) {
	if req.Body == nil || req.Body == http.NoBody {
		return req, true
	}
	if req.GetBody == nil {
		return nil, false
	}
	body, err := req.GetBody()
	if err != nil {
		return nil, false
	}
	again := *req
	again.Body = body
	return &again, true
}

// closeBody closes req's body, as a RoundTrip that did not send it must.
func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// host returns what is kept for addr, deciding at its first request
// whether its requests go through a proxy.
func (t *connTransport) host(req *http.Request, addr string) *connHost {
	t.mu.Lock()
	defer t.mu.Unlock()
	h := t.hosts[addr]
	if h == nil {
		h = &connHost{direct: true}
		if t.Next.Proxy != nil {
			if u, err := t.Next.Proxy(req); err != nil || u != nil {
				h.direct = false
			}
		}
		if t.hosts == nil {
			t.hosts = make(map[string]*connHost)
		}
		t.hosts[addr] = h
	}
	return h
}

// get returns an idle connection to addr that is still open, most
// recently used first, else a new one.
func (t *connTransport) get(ctx context.Context, h *connHost, addr string) (*upConn, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	now := t.now()
	t.mu.Lock()
	for len(h.idle) > 0 {
		c := h.idle[len(h.idle)-1]
		h.idle[len(h.idle)-1] = nil
		h.idle = h.idle[:len(h.idle)-1]
		if now.Sub(c.idleSince) > t.idleTimeout() {
			// The rest are older still.
			old := h.idle
			h.idle = nil
			t.mu.Unlock()
			c.nc.Close()
			for _, o := range old {
				o.nc.Close()
			}
			t.mu.Lock()
			break
		}
		t.mu.Unlock()
		if peerOpen(c.nc) {
			return c, true, nil
		}
		c.nc.Close()
		t.mu.Lock()
	}
	t.mu.Unlock()
	d := t.Next.DialContext
	if d == nil {
		d = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	}
	nc, err := d(ctx, "tcp", addr)
	if err != nil {
		return nil, false, err
	}
	c := &upConn{nc: nc, host: h}
	c.br = bufio.NewReaderSize(connReader{c}, 4<<10)
	c.bw = bufio.NewWriterSize(connWriter{c}, 4<<10)
	return c, false, nil
}

// put keeps c for the next request to its host, or closes it: it is
// closed if bytes beyond the answer it carried were read already (an
// upstream that sent more than its answer's framing said, a body on a
// 204 say), since they would be read as the next caller's answer.
func (t *connTransport) put(c *upConn) {
	if c.br.Buffered() > 0 {
		c.nc.Close()
		return
	}
	c.idleSince = t.now()
	t.mu.Lock()
	h := c.host
	if len(h.idle) < t.maxIdle() {
		h.idle = append(h.idle, c)
		t.mu.Unlock()
		return
	}
	t.mu.Unlock()
	c.nc.Close()
}

// CloseIdleConnections closes the idle connections, and Next's.
func (t *connTransport) CloseIdleConnections() {
	t.mu.Lock()
	var idle []*upConn
	for _, h := range t.hosts {
		idle = append(idle, h.idle...)
		h.idle = nil
	}
	t.mu.Unlock()
	for _, c := range idle {
		c.nc.Close()
	}
	t.Next.CloseIdleConnections()
}

func (t *connTransport) now() time.Time {
	if t.Now != nil {
		return t.Now()
	}
	return time.Now()
}

func (t *connTransport) idleTimeout() time.Duration {
	if t.IdleTimeout > 0 {
		return t.IdleTimeout
	}
	return 90 * time.Second
}

func (t *connTransport) maxIdle() int {
	if t.MaxIdlePerHost > 0 {
		return t.MaxIdlePerHost
	}
	return 256
}

// upConn is one connection to the upstream.
type upConn struct {
	nc        net.Conn
	host      *connHost
	br        *bufio.Reader
	bw        *bufio.Writer
	written   int64 // bytes of the current request written to nc
	werr      error // the connection's write error, if its write failed
	readLimit int64 // bytes nc may still give; < 0: no limit
	idleSince time.Time
}

// connReader reads c's connection within c.readLimit.
type connReader struct{ c *upConn }

func (r connReader) Read(p []byte) (int, error) {
	c := r.c
	if c.readLimit >= 0 {
		if c.readLimit == 0 {
			return 0, errors.New("upstream answer header larger than 10 MiB")
		}
		if int64(len(p)) > c.readLimit {
			p = p[:c.readLimit]
		}
	}
	n, err := c.nc.Read(p)
	if c.readLimit >= 0 {
		c.readLimit -= int64(n)
	}
	return n, err
}

// connWriter writes to c's connection, counting.
type connWriter struct{ c *upConn }

func (w connWriter) Write(p []byte) (int, error) {
	n, err := w.c.nc.Write(p)
	w.c.written += int64(n)
	if err != nil {
		w.c.werr = err
	}
	return n, err
}

// roundTrip writes req on c and reads its answer's header. The answer's
// body gives c back to t when read to its end, and closes it otherwise.
// A write the upstream cut short still gets its answer if the upstream
// gave one before closing (an early 413, say).
func (c *upConn) roundTrip(t *connTransport, req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	stop := context.AfterFunc(ctx, func() { c.nc.Close() })
	fail := func(err error) (*http.Response, error) {
		stop()
		c.nc.Close()
		if cerr := ctx.Err(); cerr != nil {
			return nil, cerr
		}
		return nil, err
	}
	c.written, c.werr = 0, nil
	err := req.Write(c.bw)
	if err == nil {
		err = c.bw.Flush()
	}
	if err != nil {
		switch {
		case c.werr == nil:
			return fail(err) // the request's own body failed
		case c.written == 0:
			return fail(errNothingWritten)
		}
		resp, rerr := c.readAnswer(req)
		if rerr != nil {
			return fail(err)
		}
		// Its body is read on a connection not to be used again.
		resp.Body = &upBody{rc: resp.Body, c: c, t: t, stop: stop}
		return resp, nil
	}
	resp, err := c.readAnswer(req)
	if err != nil {
		return fail(err)
	}
	keep := !resp.Close && !req.Close && resp.StatusCode != http.StatusSwitchingProtocols
	if resp.Body == http.NoBody {
		c.release(t, stop, keep)
		return resp, nil
	}
	resp.Body = &upBody{rc: resp.Body, c: c, t: t, keep: keep, stop: stop}
	return resp, nil
}

// readAnswer reads the header of req's final answer, passing the
// informational ones before it to the request's trace.
func (c *upConn) readAnswer(req *http.Request) (*http.Response, error) {
	trace := httptrace.ContextClientTrace(req.Context())
	for n := 0; ; n++ {
		c.readLimit = maxHeaderBytes
		resp, err := http.ReadResponse(c.br, req)
		c.readLimit = -1
		if err != nil {
			return nil, err
		}
		code := resp.StatusCode
		if code < 100 || code >= 200 || code == http.StatusSwitchingProtocols {
			return resp, nil
		}
		if n == max1xx {
			return nil, errors.New("upstream sent too many 1xx answers")
		}
		if trace != nil && trace.Got1xxResponse != nil {
			if err := trace.Got1xxResponse(code, textproto.MIMEHeader(resp.Header)); err != nil {
				return nil, err
			}
		}
	}
}

// upBody is an answer's body: read to its end, it gives its connection
// back to the pool; closed before, or failing, it closes it.
type upBody struct {
	rc   io.ReadCloser
	c    *upConn
	t    *connTransport
	keep bool
	stop func() bool
	end  atomic.Int32 // bodyOpen, bodyEOF or bodyClosed
}

const (
	bodyOpen int32 = iota
	bodyEOF
	bodyClosed
)

func (b *upBody) Read(p []byte) (int, error) {
	switch b.end.Load() {
	case bodyEOF:
		return 0, io.EOF
	case bodyClosed:
		return 0, http.ErrBodyReadAfterClose
	}
	n, err := b.rc.Read(p)
	if err == io.EOF {
		b.finish(bodyEOF, b.keep)
	} else if err != nil {
		b.finish(bodyClosed, false)
	}
	return n, err
}

// Close ends the body. The connection is closed unless the body was read
// to its end: the rest is not drained (an event stream may not end).
func (b *upBody) Close() error {
	b.finish(bodyClosed, false)
	return nil
}

func (b *upBody) finish(end int32, keep bool) {
	if b.end.CompareAndSwap(bodyOpen, end) {
		b.c.release(b.t, b.stop, keep)
	}
}

// release ends c's call: c goes back to t's pool if it is to be kept and
// its context's watch was stopped before it fired, and is closed otherwise.
func (c *upConn) release(t *connTransport, stop func() bool, keep bool) {
	if stop() && keep {
		t.put(c)
		return
	}
	c.nc.Close()
}
