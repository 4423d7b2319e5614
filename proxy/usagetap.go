package proxy

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/llmfleet/llmfleet"
)

// This file holds the usage tap of the sync route: the body of an
// observed response, read by the reverse proxy as it passes the answer on.

// tapUsage is the reverse proxy's ModifyResponse on the Anthropic face:
// it wraps the body of an observed call's response in a usageTap.
func (o *syncObserver) tapUsage(resp *http.Response) error {
	sc := observedCallOf(resp.Request)
	if sc == nil {
		return nil
	}
	t := sc.newTap()
	*t = usageTap{obs: o, call: sc, rc: resp.Body, status: resp.StatusCode, ctx: resp.Request.Context()}
	if ce := resp.Header.Get("Content-Encoding"); ce != "" && !strings.EqualFold(ce, "identity") {
		t.opaque = true
	}
	t.sse = strings.HasPrefix(strings.ToLower(resp.Header.Get("Content-Type")), "text/event-stream")
	if t.sse && resp.StatusCode < 300 {
		t.events = &sseTap{}
	}
	resp.Body = t
	return nil
}

// newTap returns the usageTap of the call's response: the one it holds,
// else (a second response) a new one.
func (sc *syncCall) newTap() *usageTap {
	if sc.ownTap != nil && sc.tapUsed.CompareAndSwap(false, true) {
		return sc.ownTap
	}
	return &usageTap{}
}

// usageTap is the body of an observed response: it passes every byte on
// as it is read and reports the call once the body ends or is closed.
type usageTap struct {
	obs    *syncObserver
	call   *syncCall
	rc     io.ReadCloser
	ctx    context.Context
	status int
	sse    bool
	opaque bool     // compressed: the usage cannot be read
	json   *jsonTap // scans an answer that outgrew maxDeferredScan as it comes
	kept   *[]byte  // a JSON answer's bytes not scanned yet
	inline bool     // the JSON answer outgrew maxDeferredScan: scanned as it comes
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

// keep holds p, a piece of a JSON answer, for the read after the answer
// went out (the read is the caller's wait otherwise); an answer longer
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
	t.json = new(jsonTap)
	if t.kept == nil {
		return
	}
	t.json.write(*t.kept)
	t.dropKept()
}

// dropKept gives the buffer keep held back to its pool.
func (t *usageTap) dropKept() {
	*t.kept = (*t.kept)[:0]
	keptPool.Put(t.kept)
	t.kept = nil
}

// answer reads the model, usage and error type of a JSON answer: the
// whole of one kept (readAnswer), or what the inline scan read.
func (t *usageTap) answer() (model string, u llmfleet.Usage, errType string) {
	if t.inline {
		return t.json.result()
	}
	if t.kept == nil {
		return "", u, ""
	}
	model, u, errType = readAnswer(*t.kept)
	t.dropKept()
	return model, u, errType
}

func (t *usageTap) report() {
	var (
		model, errType string
		u              llmfleet.Usage
	)
	if t.events != nil {
		model, u, errType = t.events.model, t.events.usage, t.events.errType
	} else {
		model, u, errType = t.answer()
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
	if upstreamErr != "" {
		t.obs.failed(upstreamErr)
	}
	noteModel(t.ctx, model)
	if ev := t.events; ev != nil && outcome != "ok" && t.status < 400 && !ev.final && u != (llmfleet.Usage{}) {
		// Ended (broken off, an error event, the caller gone) before a
		// message_delta counted the output: message_start's input and
		// cache counts, the output estimated from what was streamed.
		u.OutputTokens = max(u.OutputTokens, ev.estimatedOutput())
		t.obs.report(t.call, model, u, outcome, true)
		return
	}
	if outcome == "caller_canceled" || upstreamErr == "network" {
		// Broken off: billed for the usage read so far, else estimated.
		t.obs.cut(t.call, model, u, outcome)
		return
	}
	t.obs.done(t.call, model, u, outcome)
}
