package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httputil"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmfleet/llmfleet"
)

// This file observes the sync route for the cost ledger. The sync route
// goes upstream through the reverse proxy, not through the Submitter, so
// the proxy itself reads the usage off the response as it streams to the
// caller: the body is wrapped in a reader that passes every byte on as it
// comes and keeps only the few members it needs (model, usage, error).

// syncCall is what the proxy knows of a sync create-message call before
// its response arrives: it is made for a call that is observed or has a
// budget, and rides in the request's context.
type syncCall struct {
	start    time.Time // the request's arrival at the proxy
	budget   time.Duration
	body     []byte              // the request body, if it was read
	teed     *teeBody            // the request body as it streamed upstream, if kept
	cred     llmfleet.Credential // the credential it went upstream with
	observed bool                // Observe or UpstreamError is set
	client   *clientName         // names the caller in the ledger
	once     sync.Once

	// While held (serveSync sets it), the ledger entry is kept in pending
	// rather than handed to Observe, until release: the answer reaches
	// the caller first, the bookkeeping after.
	mu      sync.Mutex
	held    bool
	pending *llmfleet.LedgerEntry
	tap     *usageTap // a tap that ended while held: its report is due

	// deadline is when its budget ends (syncbudget.go); bound cuts the
	// call at its hard deadline or the upstream timeout (deadline.go).
	deadline time.Time
	bound    *callBound
	// sentBytes counts the bytes of a body not read whole (body nil) as
	// they go upstream, for the estimate of a cut call's usage.
	sentBytes atomic.Int64
}

type syncCallKey struct{}

// observing reports whether the sync route is observed.
func (s *Server) observing() bool { return s.Observe != nil || s.UpstreamError != nil }

// newSyncCall returns the syncCall of c, a call routed sync, or nil if it
// is not observed, has no budget and no upstream timeout bounds it.
func (s *Server) newSyncCall(c *call) *syncCall {
	observed := s.observing()
	if !observed && c.budget <= 0 && s.upstreamTimeout <= 0 {
		return nil
	}
	return &syncCall{start: c.arrived, budget: c.budget, body: c.body, observed: observed, client: c.client,
		deadline: c.arrived.Add(c.budget)}
}

// observedCallOf returns the syncCall of r if it is observed.
func observedCallOf(r *http.Request) *syncCall {
	if sc := syncCallOf(r); sc != nil && sc.observed {
		return sc
	}
	return nil
}

func syncCallOf(r *http.Request) *syncCall {
	sc, _ := r.Context().Value(syncCallKey{}).(*syncCall)
	return sc
}

// prepareObserved drops the caller's Accept-Encoding from an observed
// call, so that the usage can be read from the body: http.Transport then
// negotiates (and undoes) compression itself.
func prepareObserved(pr *httputil.ProxyRequest) {
	if observedCallOf(pr.In) != nil {
		pr.Out.Header.Del("Accept-Encoding")
	}
}

// tapResponse is the reverse proxy's ModifyResponse: it wraps the body of
// an observed call's response in a usageTap.
func (s *Server) tapResponse(resp *http.Response) error {
	sc := observedCallOf(resp.Request)
	if sc == nil {
		return nil
	}
	t := &usageTap{s: s, call: sc, rc: resp.Body, status: resp.StatusCode, ctx: resp.Request.Context()}
	if ce := resp.Header.Get("Content-Encoding"); ce != "" && !strings.EqualFold(ce, "identity") {
		t.opaque = true
	}
	t.sse = strings.HasPrefix(strings.ToLower(resp.Header.Get("Content-Type")), "text/event-stream")
	if t.sse && resp.StatusCode < 300 {
		t.events = &sseTap{}
	} else {
		t.json = &jsonTap{}
	}
	resp.Body = t
	return nil
}

// observeFailure reports an observed call whose upstream call failed
// before any response: "caller_canceled" if the caller left (the call may
// be billed: its usage is estimated), else an api_error (the 502 the
// caller gets) and a network upstream error.
func (s *Server) observeFailure(r *http.Request) {
	sc := observedCallOf(r)
	if sc == nil {
		return
	}
	if r.Context().Err() != nil {
		s.reportCut(sc, "", llmfleet.Usage{}, "caller_canceled")
		return
	}
	if s.UpstreamError != nil {
		s.UpstreamError("network")
	}
	s.reportSync(sc, "", llmfleet.Usage{}, "api_error")
}

// reportCut reports a sync call cut after it went upstream (its hard
// deadline, the upstream timeout, its caller leaving), which the
// upstream may bill: with u, the usage read off its answer so far, or,
// if none was, an estimate from its body's size (LedgerEntry.Estimated).
func (s *Server) reportCut(sc *syncCall, model string, u llmfleet.Usage, outcome string) {
	estimated := u == (llmfleet.Usage{})
	if estimated {
		n := int64(len(sc.body))
		if sc.body == nil {
			n = sc.sentBytes.Load()
		}
		u = llmfleet.EstimatedUsage(n)
	}
	s.report(sc, model, u, outcome, estimated)
}

// reportSync hands the ledger entry of a sync call to Observe, once.
func (s *Server) reportSync(sc *syncCall, model string, u llmfleet.Usage, outcome string) {
	s.report(sc, model, u, outcome, false)
}

// report is reportSync, the usage estimated or not.
func (s *Server) report(sc *syncCall, model string, u llmfleet.Usage, outcome string, estimated bool) {
	sc.once.Do(func() {
		if s.Observe == nil {
			return
		}
		now := s.clock.Now()
		if model == "" && sc.body != nil {
			var m struct {
				Model string `json:"model"`
			}
			_ = json.Unmarshal(sc.body, &m)
			model = m.Model
		}
		e := llmfleet.LedgerEntry{
			Time:      now,
			Provider:  s.Provider,
			Model:     model,
			Route:     llmfleet.RouteSync,
			Outcome:   outcome,
			Usage:     u,
			Latency:   now.Sub(sc.start),
			Budget:    sc.budget,
			Estimated: estimated,
		}
		e.BudgetMet = llmfleet.BudgetMet(outcome == "ok", e.Latency, sc.budget)
		sc.mu.Lock()
		if sc.held {
			sc.pending = &e
			sc.mu.Unlock()
			return
		}
		sc.mu.Unlock()
		s.noteCache(sc, &e)
		e.Client = sc.client.String()
		s.Observe(e)
	})
}

// noteCache teaches the Submitter's cost model (a llmfleet.CacheObserver)
// the usage of a sync call whose body was read, and records in its entry
// what its route's cache writes cost (LedgerEntry.MissUSD).
func (s *Server) noteCache(sc *syncCall, e *llmfleet.LedgerEntry) {
	co, ok := s.Submitter.(llmfleet.CacheObserver)
	body := sc.body
	if body == nil && sc.teed != nil {
		body = sc.teed.kept()
	}
	if !ok || body == nil || e.Outcome != "ok" || !bytes.Contains(body, cacheControlKey) {
		return
	}
	req := &llmfleet.Request{Provider: s.Provider, Credential: sc.cred, Body: body}
	e.MissUSD = co.ObserveCache(req, llmfleet.RouteSync, e.Usage, e.Time)
}

// hold keeps the call's ledger entry from Observe until release.
func (sc *syncCall) hold() {
	sc.mu.Lock()
	sc.held = true
	sc.mu.Unlock()
}

// release hands the entry held back, if any, to Observe, reading it
// first off the tap that ended meanwhile.
func (s *Server) release(sc *syncCall) {
	sc.mu.Lock()
	e, t := sc.pending, sc.tap
	sc.held, sc.pending, sc.tap = false, nil, nil
	sc.mu.Unlock()
	if t != nil {
		t.report()
	}
	if e != nil {
		s.noteCache(sc, e)
		e.Client = sc.client.String()
		s.Observe(*e)
	}
}

// usageTap is the body of an observed response: it passes every byte on
// as it is read and reports the call once the body ends or is closed.
type usageTap struct {
	s      *Server
	call   *syncCall
	rc     io.ReadCloser
	ctx    context.Context
	status int
	sse    bool
	opaque bool // compressed: the usage cannot be read
	json   *jsonTap
	kept   *[]byte // a JSON answer's bytes not scanned yet
	inline bool    // the JSON answer outgrew maxDeferredScan: scanned as it comes
	events *sseTap
	eof    bool
	err    error
	once   sync.Once
}

// maxDeferredScan is the size up to which a JSON answer is kept and
// scanned for its usage after it went out, rather than on its way.
const maxDeferredScan = 64 << 10

// keptPool holds the buffers of JSON answers kept for a deferred scan.
var keptPool = sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}

func (t *usageTap) Read(p []byte) (int, error) {
	n, err := t.rc.Read(p)
	if n > 0 && !t.opaque {
		if t.events != nil {
			t.events.write(p[:n])
		} else {
			t.keep(p[:n])
		}
	}
	if err != nil {
		if err == io.EOF {
			t.eof = true
		} else {
			t.err = err
		}
		t.finish()
	}
	return n, err
}

func (t *usageTap) Close() error {
	err := t.rc.Close()
	t.finish()
	return err
}

// finish reports the call, once: its model, usage and outcome, and the
// upstream error if it failed.
func (t *usageTap) finish() {
	t.once.Do(func() {
		sc := t.call
		sc.mu.Lock()
		if sc.held {
			sc.tap = t // decoded after the answer went out
			sc.mu.Unlock()
			return
		}
		sc.mu.Unlock()
		t.report()
	})
}

// keep holds p, a piece of a JSON answer, for the scan after the answer
// went out (the scan is the caller's wait otherwise); an answer longer
// than maxDeferredScan is scanned as it comes from then on.
func (t *usageTap) keep(p []byte) {
	if !t.inline {
		if t.kept == nil {
			t.kept = keptPool.Get().(*[]byte)
		}
		if len(*t.kept)+len(p) <= maxDeferredScan {
			*t.kept = append(*t.kept, p...)
			return
		}
		t.scanKept()
	}
	t.json.write(p)
}

// scanKept scans what keep held and scans inline from then on.
func (t *usageTap) scanKept() {
	t.inline = true
	if t.kept == nil {
		return
	}
	t.json.write(*t.kept)
	*t.kept = (*t.kept)[:0]
	keptPool.Put(t.kept)
	t.kept = nil
}

func (t *usageTap) report() {
	var (
		model, errType string
		u              llmfleet.Usage
	)
	if t.events != nil {
		model, u, errType = t.events.model, t.events.usage, t.events.errType
	} else {
		t.scanKept()
		model, u, errType = t.json.result()
	}
	outcome := "ok"
	upstreamErr := ""
	switch {
	case t.status >= 400:
		outcome = errType
		if outcome == "" {
			outcome = "http_" + strconv.Itoa(t.status)
		}
		upstreamErr = outcome
		u = llmfleet.Usage{}
	case errType != "": // an error event in the stream
		outcome, upstreamErr = errType, errType
	case !t.eof && t.ctx.Err() != nil, !t.eof && t.err == nil:
		outcome = "caller_canceled" // the caller left before the end
	case !t.eof:
		outcome, upstreamErr = "api_error", "network"
	}
	if upstreamErr != "" && t.s.UpstreamError != nil {
		t.s.UpstreamError(upstreamErr)
	}
	noteModel(t.ctx, model)
	if outcome == "caller_canceled" {
		t.s.reportCut(t.call, model, u, outcome) // the usage read so far, else estimated
		return
	}
	t.s.reportSync(t.call, model, u, outcome)
}

// cacheControlKey is what a body with prompt-cache breakpoints contains.
var cacheControlKey = []byte(`"cache_control"`)

// maxTeed bounds the bytes of a streamed request body kept for the cost
// model; a longer body is not kept.
const maxTeed = MaxBodyBytes

// tee returns rc, a request body streamed upstream, keeping a copy of
// what is read of it.
func (sc *syncCall) tee(rc io.ReadCloser) io.ReadCloser {
	t := &teeBody{ReadCloser: rc}
	sc.teed = t
	return t
}

// teeBody keeps what is read of a body, up to maxTeed bytes.
type teeBody struct {
	io.ReadCloser
	mu   sync.Mutex
	buf  []byte
	over bool
	eof  bool
}

func (t *teeBody) Read(p []byte) (int, error) {
	n, err := t.ReadCloser.Read(p)
	t.mu.Lock()
	if !t.over {
		if len(t.buf)+n > maxTeed {
			t.over, t.buf = true, nil
		} else {
			t.buf = append(t.buf, p[:n]...)
		}
	}
	if err == io.EOF {
		t.eof = true
	}
	t.mu.Unlock()
	return n, err
}

// kept returns the whole body if it was read to its end and kept; nil
// otherwise.
func (t *teeBody) kept() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.eof || t.over {
		return nil
	}
	return t.buf
}
