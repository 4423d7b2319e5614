package proxy

import (
	"context"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/http/httputil"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmfleet/llmfleet"
)

// This file holds the syncCall, what rides in the context of a call of
// the Anthropic face's sync route to be bounded, retried and observed for
// the cost ledger. The sync route goes upstream through the reverse
// proxy, not through the Submitter, so the proxy itself reads the usage
// off the response as it streams to the caller (usagetap.go) and hands
// the ledger entry on (observer.go).

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
	span     *callSpan           // the call's span (trace.go), nil if none
	once     sync.Once

	// While held (serveSync sets it), the ledger entry is kept in pending
	// rather than handed to Observe, until release: the answer reaches
	// the caller first, the bookkeeping after.
	mu         sync.Mutex
	held       bool
	pending    llmfleet.LedgerEntry // held by value: no allocation per call
	hasPending bool
	tap        *usageTap // a tap that ended while held: its report is due

	// deadline is when its budget ends (syncbudget.go); bound cuts the
	// call at its hard deadline or the upstream timeout (deadline.go).
	deadline time.Time
	bound    *callBound
	ownBound callBound   // what bound points to, allocated with the call
	ctx      syncCallCtx // the context carrying it (context)
	// ownTap, for an observed call, is the usage tap of its response
	// (usagetap.go), allocated with it; tapUsed says it is taken.
	ownTap  *usageTap
	tapUsed atomic.Bool
	// counted is its request body counting sentBytes (messages.go).
	counted countedBody
	// sentBytes counts the bytes of a body not read whole (body nil) as
	// they go upstream, for the estimate of a cut call's usage.
	sentBytes atomic.Int64
	// waiting says the call is waiting out an upstream error's
	// retry-after (syncbudget.go): nothing it sent is in flight, and its
	// only answers were errors, which are not billed.
	waiting atomic.Bool
	// wrote says its current attempt's request began to go upstream
	// (trace's WroteHeaders: from then on the upstream may get it whole
	// before the call hears that it did); until then, a call cut or
	// failed was never carried out, and is not billed.
	wrote atomic.Bool
	trace httptrace.ClientTrace
}

// inFlight reports whether the call has a request out upstream, which
// the upstream may carry out and bill whatever becomes of its answer:
// written, and not waiting to be sent again.
func (sc *syncCall) inFlight() bool { return sc.wrote.Load() && !sc.waiting.Load() }

// traced returns ctx with the call's trace, which tells when its
// request began to go upstream (wrote).
func (sc *syncCall) traced(ctx context.Context) context.Context {
	sc.trace.WroteHeaders = func() { sc.wrote.Store(true) }
	return httptrace.WithClientTrace(ctx, &sc.trace)
}

type syncCallKey struct{}

// syncCallCtx is a context carrying a syncCall under syncCallKey, as
// context.WithValue would, held in the syncCall rather than allocated.
type syncCallCtx struct {
	context.Context
	sc *syncCall
}

func (c *syncCallCtx) Value(key any) any {
	if _, ok := key.(syncCallKey); ok {
		return c.sc
	}
	return c.Context.Value(key)
}

// context returns parent carrying sc (syncCallOf reads it).
func (sc *syncCall) context(parent context.Context) context.Context {
	sc.ctx = syncCallCtx{parent, sc}
	return &sc.ctx
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

// newSyncCall returns the syncCall of c, a call routed sync, or nil if it
// is not observed, has no budget and no upstream timeout bounds it.
func (f *forwarder) newSyncCall(c *call) *syncCall {
	observed := f.obs.observing()
	if !observed && c.budget <= 0 && f.timeout <= 0 {
		return nil
	}
	var sc *syncCall
	if observed {
		o := new(observedCall)
		sc = &o.syncCall
		sc.ownTap = &o.tap
	} else {
		sc = new(syncCall)
	}
	sc.start, sc.budget, sc.body, sc.observed, sc.client = c.arrived, c.budget, c.body, observed, c.client
	sc.span = c.span
	sc.deadline = c.arrived.Add(c.budget)
	return sc
}

// observedCall is an observed syncCall and the usage tap of its response,
// allocated together.
type observedCall struct {
	syncCall
	tap usageTap
}

// hold keeps the call's ledger entry from Observe until released
// (syncObserver.release).
func (sc *syncCall) hold() {
	sc.mu.Lock()
	sc.held = true
	sc.mu.Unlock()
}

// prepareObserved drops the caller's Accept-Encoding from an observed
// call, so that the usage can be read from the body: http.Transport then
// negotiates (and undoes) compression itself.
func prepareObserved(pr *httputil.ProxyRequest) {
	if observedCallOf(pr.In) != nil {
		pr.Out.Header.Del("Accept-Encoding")
	}
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
