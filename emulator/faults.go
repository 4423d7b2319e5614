package emulator

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/claudewire"
)

// Fault is a failure the Server injects into the next matching requests.
// A request matches when Method, Endpoint and PathPrefix all match (empty
// fields match anything). Faults are tried in the order they were injected;
// the first match is used and its Times is counted down.
//
// What the fault does, in this order: wait Delay; drop the connection
// (DropConnection, DropAfterBody); with LandAfter, read a create, drop the
// connection (or answer Status) and create its batch later; answer Status
// with an error envelope (with AfterProcess, only after processing the
// request normally); or, with DropResponse, process the request normally
// and drop the connection instead of answering. A fault with only Delay set slows the request down
// and then serves it normally. StreamError faults match only streaming
// POST /v1/messages requests and break the stream after a 200.
type Fault struct {
	// Method is the HTTP method to match, e.g. "POST"; empty matches any.
	Method string
	// Endpoint is the endpoint to match, one of the Endpoint* names such as
	// EndpointCreate; empty matches any.
	Endpoint string
	// PathPrefix is a prefix of the URL path to match; empty matches any.
	// Note that "/v1/messages" also matches the batch endpoints.
	PathPrefix string

	// Status is the HTTP status to answer with, e.g. 429, 500 or 529; 0
	// answers no error.
	Status int
	// ErrorType is the error.type of the envelope; empty means the type the
	// API uses for Status (rate_limit_error for 429, overloaded_error for
	// 529, api_error for 500, ...).
	ErrorType string
	// Message is the error message; empty means a default one.
	Message string
	// ErrorCode, if set, is sent as error.details.error_code, e.g.
	// "enforced_spend_limit_reached" for the spend-cap 429 (which the real
	// API sends without retry-after).
	ErrorCode string
	// RetryAfter, if positive, is sent as the retry-after header, in whole
	// seconds rounded up.
	RetryAfter time.Duration
	// RetryAfterMs, if positive, is sent as the retry-after-ms header.
	RetryAfterMs time.Duration
	// ShouldRetry, if "true" or "false", is sent as the x-should-retry
	// header.
	ShouldRetry string
	// Header holds extra response headers to send with the error.
	Header http.Header

	// Times is how many matching requests the fault applies to; 0 means 1
	// and a negative value means every matching request until ClearFaults.
	Times int

	// Delay is waited (on Server.Clock) before anything else.
	Delay time.Duration
	// DropConnection closes the connection without reading the request
	// body or answering.
	DropConnection bool
	// DropAfterBody reads the whole request body, then closes the
	// connection without answering: the client sees a connection error
	// after it sent the request, and nothing was done.
	DropAfterBody bool
	// DropResponse processes the request normally (a batch create creates
	// the batch), then closes the connection instead of answering: the
	// ambiguous failure a client must reconcile.
	DropResponse bool
	// AfterProcess, with Status set, processes the request normally (a
	// batch create creates the batch, a cancel cancels it), throws the
	// real answer away and answers Status with the error envelope instead:
	// e.g. the 503 a gateway answers after the provider created the batch.
	// It works on every endpoint; without Status it does nothing.
	AfterProcess bool
	// LandAfter, if positive, makes a create that lands late: the whole
	// request body is read and the connection dropped without an answer
	// (or, with Status set, Status is answered), and the batch is created
	// LandAfter later, as if the request had been processed then: its
	// created_at, turnaround and expiry count from the landing time, and
	// it shows up in Stats and in the listing only from then on. Time is
	// Server.Clock's Now (not a wait): the batch is created lazily by the
	// first request (or Stats call) that sees the clock at or past the
	// landing time, so manual clocks and testing/synctest bubbles need no
	// goroutine to wake up. A create the emulator would refuse (bad key or
	// body) lands nothing, nor does a request to another endpoint. It takes
	// precedence over DropAfterBody, AfterProcess and DropResponse;
	// DropConnection takes precedence over it (nothing is read or lands).
	LandAfter time.Duration

	// StreamError makes a streaming POST /v1/messages answer 200, send
	// StreamErrorAfter events and then an SSE error event of ErrorType
	// (default overloaded_error), and end.
	StreamError bool
	// StreamErrorAfter is how many events precede the error event; values
	// below 1 mean 1 (message_start only).
	StreamErrorAfter int
}

// faultList holds the pending faults.
type faultList struct {
	mu     sync.Mutex
	faults []*Fault
	fired  int
}

// InjectFault makes the next f.Times requests matching f fail as f says.
// It is safe to call concurrently with requests being served.
func (s *Server) InjectFault(f Fault) {
	if f.Times == 0 {
		f.Times = 1
	}
	s.fault.mu.Lock()
	s.fault.faults = append(s.fault.faults, &f)
	s.fault.mu.Unlock()
}

// ClearFaults removes every pending fault.
func (s *Server) ClearFaults() {
	s.fault.mu.Lock()
	s.fault.faults = nil
	s.fault.mu.Unlock()
}

// PendingFaults returns how many injected faults have uses left.
func (s *Server) PendingFaults() int {
	s.fault.mu.Lock()
	defer s.fault.mu.Unlock()
	return len(s.fault.faults)
}

// takeFault returns the first fault matching the request and uses it up
// once. stream selects StreamError faults (true) or the others (false).
func (s *Server) takeFault(method, path, endpoint string, stream bool) (*Fault, bool) {
	fl := &s.fault
	fl.mu.Lock()
	defer fl.mu.Unlock()
	for i, f := range fl.faults {
		if f.StreamError != stream ||
			(f.Method != "" && !strings.EqualFold(f.Method, method)) ||
			(f.Endpoint != "" && f.Endpoint != endpoint) ||
			!strings.HasPrefix(path, f.PathPrefix) {
			continue
		}
		cp := *f
		if f.Times > 0 {
			f.Times--
			if f.Times == 0 {
				fl.faults = append(fl.faults[:i:i], fl.faults[i+1:]...)
			}
		}
		fl.fired++
		return &cp, true
	}
	return nil, false
}

// applyFault carries out fault f for call c; serve runs the request
// normally. It reports whether the request should still be served.
func (s *Server) applyFault(c *call, f *Fault, serve func()) bool {
	if f.Delay > 0 && llmfleet.Sleep(c.r.Context(), s.Clock, f.Delay) != nil {
		return false
	}
	switch {
	case f.DropConnection:
		dropConn(c.w)
		return false
	case f.LandAfter > 0:
		s.landLater(c, f.LandAfter)
		if f.Status != 0 {
			writeFault(c, f)
		} else {
			dropConn(c.w)
		}
		return false
	case f.DropAfterBody:
		io.Copy(io.Discard, c.r.Body)
		dropConn(c.w)
		return false
	case f.Status != 0:
		if f.AfterProcess {
			serveDiscarded(c, serve)
		}
		writeFault(c, f)
		return false
	case f.DropResponse:
		serveDiscarded(c, serve)
		dropConn(c.w)
		return false
	}
	return true
}

// serveDiscarded runs serve for call c and throws its answer away.
func serveDiscarded(c *call, serve func()) {
	orig := c.w
	c.w = &bufferWriter{header: http.Header{}}
	serve()
	c.w = orig
}

// writeFault answers call c with the error envelope of fault f.
func writeFault(c *call, f *Fault) {
	typ := f.ErrorType
	if typ == "" {
		typ = claudewire.TypeForStatus(f.Status)
	}
	msg := f.Message
	if msg == "" {
		msg = defaultMessage(typ)
	}
	h := c.w.Header()
	for k, vs := range f.Header {
		for _, v := range vs {
			h.Add(k, v)
		}
	}
	if f.RetryAfter > 0 {
		h.Set("retry-after", strconv.FormatInt(int64((f.RetryAfter+time.Second-1)/time.Second), 10))
	}
	if f.RetryAfterMs > 0 {
		h.Set("retry-after-ms", strconv.FormatInt(f.RetryAfterMs.Milliseconds(), 10))
	}
	if f.ShouldRetry != "" {
		h.Set("x-should-retry", f.ShouldRetry)
	}
	writeError(c.w, &apiError{status: f.Status, typ: typ, message: msg, errorCode: f.ErrorCode}, c.id)
}

// dropConn closes the client connection without an answer.
func dropConn(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		// HTTP/2 or a recorder: abort the handler, which resets the stream.
		panic(http.ErrAbortHandler)
	}
	conn.Close()
}

// bufferWriter is a ResponseWriter that keeps the answer to itself.
type bufferWriter struct {
	header http.Header
	buf    bytes.Buffer
	status int
}

func (b *bufferWriter) Header() http.Header         { return b.header }
func (b *bufferWriter) Write(p []byte) (int, error) { return b.buf.Write(p) }
func (b *bufferWriter) WriteHeader(code int)        { b.status = code }
func (b *bufferWriter) Flush()                      {}

// defaultMessage is a message for an injected error of type t.
func defaultMessage(t string) string {
	switch t {
	case "overloaded_error":
		return "Overloaded"
	case "rate_limit_error":
		return "Number of request tokens has exceeded your per-minute rate limit (emulated)"
	case "api_error":
		return "Internal server error (emulated)"
	case "timeout_error":
		return "Request timed out (emulated)"
	}
	return fmt.Sprintf("emulated %s", t)
}
