package proxy

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"os"
	"sync/atomic"
	"time"
)

// This file bounds what a slow or stalled client can hold: the time to
// send a request body (Server.BodyReadTimeout, a read deadline on the
// connection from the end of the headers until the body has been read
// whole; a long answer streamed back is not bounded by it) and the bytes
// held across all connections in bodies the proxy reads whole before it
// has all of them (Server.MaxBodyBytesInFlight; a body of known length
// counts whole from its first read, as its buffer is made then).

// DefaultBodyReadTimeout is the time a client has to send a request body
// when Server.BodyReadTimeout is 0.
const DefaultBodyReadTimeout = time.Minute

// DefaultMaxBodyBytesInFlight is the budget of bytes in unfinished request
// bodies when Server.MaxBodyBytesInFlight is 0: eight bodies of the
// largest size the API accepts.
const DefaultMaxBodyBytesInFlight = 8 * MaxBodyBytes

// bodyTooSlow answers a body not received within the body read timeout:
// 408 timeout_error, which SDKs retry.
var bodyTooSlow = &apiError{http.StatusRequestTimeout, "timeout_error", "The request body was not received in time."}

// bodiesFull answers a body that would take the bytes held in unfinished
// bodies over the budget: 529 overloaded_error, which SDKs retry after a
// back-off, as they retry the API's own.
var bodiesFull = &apiError{529, "overloaded_error", "llmfleet is holding too many unfinished request bodies; retry shortly."}

// bodyBudget counts the bytes reserved for request bodies being read.
type bodyBudget struct {
	max  int64 // < 0: no budget
	held atomic.Int64
}

// reserve takes n bytes of the budget, reporting false (and taking none)
// if they are not left.
func (b *bodyBudget) reserve(n int64) bool {
	if b.max < 0 {
		return true
	}
	if b.held.Add(n) > b.max {
		b.held.Add(-n)
		return false
	}
	return true
}

func (b *bodyBudget) release(n int64) {
	if b.max >= 0 {
		b.held.Add(-n)
	}
}

// putBack gives r, whose body read has read, body again, to be passed on.
func putBack(r *http.Request, body []byte) {
	r.Body, r.ContentLength = readCloser{bytes.NewReader(body), http.NoBody}, int64(len(body))
}

// read reads a request body of at most MaxBodyBytes, within the body
// read timeout and the budget of bytes in unfinished bodies.
func (b *bodyBudget) read(r *http.Request) ([]byte, *apiError) {
	if r.Body == nil {
		return nil, nil
	}
	if r.ContentLength > MaxBodyBytes {
		return nil, tooLarge
	}
	if r.ContentLength > 0 {
		// The length is known (and net/http holds the client to it): read
		// into a buffer of exactly that size, which a parked request keeps.
		if !b.reserve(r.ContentLength) {
			return nil, bodiesFull
		}
		defer b.release(r.ContentLength)
		body := make([]byte, r.ContentLength)
		if _, err := io.ReadFull(r.Body, body); err != nil {
			return nil, readFailed(r, err)
		}
		bodyRead(r)
		return body, nil
	}
	cr := &countedReader{r: io.LimitReader(r.Body, MaxBodyBytes+1), b: b}
	defer func() { b.release(cr.held) }()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(cr); err != nil {
		if errors.Is(err, errBodiesFull) {
			return nil, bodiesFull
		}
		return nil, readFailed(r, err)
	}
	if buf.Len() > MaxBodyBytes {
		return nil, tooLarge
	}
	bodyRead(r)
	return buf.Bytes(), nil
}

// BodyBytesInFlight returns the bytes now reserved for request bodies the
// proxy is reading whole (see MaxBodyBytesInFlight).
func (s *Server) BodyBytesInFlight() int64 {
	s.init()
	return s.bodies.held.Load()
}

// guardedBody is a request body read under the body read timeout: when it
// has been read whole, the connection's read deadline is lifted.
type guardedBody struct {
	io.ReadCloser
	rc       http.ResponseController
	timedOut atomic.Bool
	done     atomic.Bool
}

func (g *guardedBody) Read(p []byte) (int, error) {
	n, err := g.ReadCloser.Read(p)
	if err == io.EOF {
		g.finish()
	} else if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		g.timedOut.Store(true)
	}
	return n, err
}

// finish lifts the read deadline of a body read whole.
func (g *guardedBody) finish() {
	if g.done.CompareAndSwap(false, true) {
		g.rc.SetReadDeadline(time.Time{})
	}
}

// bodyRead lifts the read deadline of r's body, read whole.
func bodyRead(r *http.Request) {
	if g, ok := r.Body.(*guardedBody); ok {
		g.finish()
	}
}

// errBodiesFull is countedReader's error when the budget is spent.
var errBodiesFull = errors.New("the budget of bytes in unfinished request bodies is spent")

// countedReader reserves in b the bytes it reads from r; held is what it
// has reserved, to release when the body is done with.
type countedReader struct {
	r    io.Reader
	b    *bodyBudget
	held int64
}

func (c *countedReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if n > 0 {
		if !c.b.reserve(int64(n)) {
			return 0, errBodiesFull
		}
		c.held += int64(n)
	}
	return n, err
}

// guardBody starts the body read timeout of r, a request with a body:
// it has timeout (none if 0 or less) to send it whole.
func guardBody(w http.ResponseWriter, r *http.Request, timeout time.Duration) {
	if r.Body == nil || r.Body == http.NoBody || timeout <= 0 {
		return
	}
	g := &guardedBody{ReadCloser: r.Body, rc: *http.NewResponseController(w)} // one allocation for both
	if g.rc.SetReadDeadline(time.Now().Add(timeout)) != nil {
		return // not a connection whose deadline can be set
	}
	r.Body = g
}

// bodyTimedOut reports whether reading r's body ran into the body read
// timeout.
func bodyTimedOut(r *http.Request) bool {
	g, ok := r.Body.(*guardedBody)
	return ok && g.timedOut.Load()
}

// readFailed is the answer to a body that could not be read: too slow, or
// broken off.
func readFailed(r *http.Request, err error) *apiError {
	if bodyTimedOut(r) || errors.Is(err, os.ErrDeadlineExceeded) {
		return bodyTooSlow
	}
	return invalidRequest("llmfleet could not read the request body.")
}

// durationSetting is v, or def when v is 0; negative means none.
func durationSetting(v, def time.Duration) time.Duration {
	if v == 0 {
		return def
	}
	return v
}
