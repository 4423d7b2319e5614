package proxy

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/internal/httprec"
)

// parkWriteTimeout bounds the write of an answer to a caller parked on its
// connection alone.
const parkWriteTimeout = 10 * time.Second

// parkLookupTimeout bounds the look-up of a stored answer when a parked
// caller's batched request failed.
const parkLookupTimeout = 10 * time.Second

// parkedConn is a non-streaming batched caller parked without a goroutine:
// the proxy took its HTTP/1.1 connection over from net/http (dropping the
// connection's buffers and the goroutine serving it) and writes the
// complete response itself, with Connection: close, once the Submitter
// calls back.
type parkedConn struct {
	// p renders the answer (pipeline.answer) and counts the caller in
	// its Server's parkedSet until it is written.
	p    pipeline
	conn net.Conn
	c    *call
	// h holds the headers the handler had set before the take-over
	// (llmfleet-route, llmfleet-request-id, ...).
	h http.Header
	// a is the access record, reported once the answer is written.
	a *accessRec
}

// park parks a non-streaming batched call on its connection alone, if
// it can: the Submitter is a llmfleet.FuncSubmitter, the request is
// HTTP/1.1 and w can hand its connection over (not HTTP/2, not a
// recorder, not the SDK middleware). It reports whether it did; the call
// is then answered (or failed) on the connection, and the handler must
// return at once. The request body must have been read in full.
//
// A connection whose client sent more after the request (a pipelined
// request) is taken over too, but then waits in the handler's goroutine as
// before; its answer closes the connection and the pipelined request goes
// unanswered, which a pipelining client must be ready for (RFC 9112,
// section 9.3.2).
func (pl pipeline) park(w http.ResponseWriter, r *http.Request, c *call, budget time.Duration) bool {
	s := pl.s
	fs, ok := s.Submitter.(llmfleet.FuncSubmitter)
	if !ok || r.ProtoMajor != 1 || r.ProtoMinor < 1 {
		return false
	}
	h := w.Header()
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return false // cannot be taken over: today's path
	}
	p := &parkedConn{p: pl, conn: conn, c: c, h: h, a: accessOf(r.Context())}
	if p.a != nil {
		p.a.mu.Lock()
		p.a.parked = true
		// The record outlives the handler while the caller is parked: it
		// must not keep net/http's response, and with it the connection's
		// buffers, which the take-over dropped.
		p.a.w.ResponseWriter = nil
		p.a.mu.Unlock()
	}
	pipelined := brw.Reader.Buffered() > 0
	c.span.park()
	s.parked.add(p)
	// The submission must outlive the handler, whose context net/http
	// cancels when it returns; the caller cannot be watched any more.
	ctx := context.WithoutCancel(r.Context())
	if pipelined {
		resp, err := s.Submitter.SubmitBatch(ctx, budget, c.req)
		p.answer(resp, err, true)
		return true
	}
	if err := fs.SubmitBatchFunc(ctx, budget, c.req, p.done); err != nil {
		p.answer(nil, err, false)
	}
	return true
}

// done is the Submitter's callback: it may run under the Submitter's
// locks, so the write goes to a goroutine of its own, which ends with it.
func (p *parkedConn) done(resp *llmfleet.Response, err error) {
	go p.answer(resp, err, false)
}

// answer writes the complete response to resp or err on the connection,
// as the pipeline would have written it, with Connection: close, closes the
// connection and reports the access record. A write that fails (the
// caller left) is no error: the answer stays readable by its ticket.
func (p *parkedConn) answer(resp *llmfleet.Response, err error, pipelined bool) {
	defer p.p.s.parked.remove(p)
	defer p.c.span.end()
	ctx, cancel := context.WithTimeout(context.Background(), parkLookupTimeout)
	rec := httprec.New(p.h)
	p.p.answer(ctx, rec, p.c, resp, err)
	cancel()
	if rec.Header().Get("Date") == "" {
		rec.Header().Set("Date", p.p.s.clock.Now().UTC().Format(http.TimeFormat))
	}
	out := &http.Response{
		StatusCode:    rec.Status(),
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        rec.Header(),
		ContentLength: int64(len(rec.Body())),
		Body:          io.NopCloser(bytes.NewReader(rec.Body())),
		Close:         true,
	}
	var buf bytes.Buffer
	out.Write(&buf)
	p.conn.SetWriteDeadline(time.Now().Add(parkWriteTimeout))
	_, werr := p.conn.Write(buf.Bytes())
	p.close(pipelined)
	if werr != nil {
		p.p.s.log.Debug("parked caller gone before its answer", "request_id", p.c.req.ID, "err", werr)
	}
	if p.a != nil {
		status := rec.Status()
		if werr != nil {
			status = 0
		}
		p.a.report(status, rec.Header())
	}
}

// close closes the connection after its answer: the write side first, so
// that bytes the client sent and no one read (a pipelined request) do not
// reset the connection before the answer is read.
func (p *parkedConn) close(pipelined bool) {
	if cw, ok := p.conn.(interface{ CloseWrite() error }); ok && pipelined {
		cw.CloseWrite()
		p.conn.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
		io.Copy(io.Discard, p.conn)
	}
	p.conn.Close()
}

// parkedSet holds the callers parked on their connections, which
// http.Server.Shutdown does not see, for Server.Drain: the parker. Its
// zero value is empty.
type parkedSet struct {
	mu    sync.Mutex
	conns map[*parkedConn]struct{}
	idle  chan struct{} // closed when the set empties, if someone waits
}

// add counts p as parked.
func (ps *parkedSet) add(p *parkedConn) {
	ps.mu.Lock()
	if ps.conns == nil {
		ps.conns = make(map[*parkedConn]struct{})
	}
	ps.conns[p] = struct{}{}
	ps.mu.Unlock()
}

// remove counts p answered, waking Drain if it was the last.
func (ps *parkedSet) remove(p *parkedConn) {
	ps.mu.Lock()
	delete(ps.conns, p)
	if len(ps.conns) == 0 && ps.idle != nil {
		close(ps.idle)
		ps.idle = nil
	}
	ps.mu.Unlock()
}

// Drain waits until every caller parked on its connection alone (see the
// package doc) has been answered, or ctx ends; then it closes the
// connections of those still waiting, and returns ctx's error if there
// were any. Their answers come from the Submitter: close it first, so
// that it answers every caller. http.Server.Shutdown does not wait for
// these callers, whose connections net/http handed over.
func (s *Server) Drain(ctx context.Context) error { return s.parked.drain(ctx) }

// drain waits until ps is empty or ctx ends (see Server.Drain).
func (ps *parkedSet) drain(ctx context.Context) error {
	for {
		ps.mu.Lock()
		if len(ps.conns) == 0 {
			ps.mu.Unlock()
			return nil
		}
		if ps.idle == nil {
			ps.idle = make(chan struct{})
		}
		idle := ps.idle
		ps.mu.Unlock()
		select {
		case <-idle:
		case <-ctx.Done():
			ps.mu.Lock()
			for p := range ps.conns {
				p.conn.Close()
			}
			ps.mu.Unlock()
			return ctx.Err()
		}
	}
}

// Parked returns the number of callers parked on their connections alone.
func (s *Server) Parked() int { return s.parked.count() }

// count returns the number of callers parked.
func (ps *parkedSet) count() int {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return len(ps.conns)
}
