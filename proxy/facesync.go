package proxy

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
	"time"

	"github.com/llmfleet/llmfleet"
)

// This file holds the sync and flex route of the OpenAI and Gemini
// faces, written once: the call goes upstream through the forwarder's
// reverse proxy of its face, as a pass-through call does, its attempts
// through the forwarder's transport (flex ones through the engine's flex
// executor, as the face's flexWire says), and its answer streams back
// through the face's tap (its ModifyResponse), which reads its usage for
// the ledger. What differs, the face gives: its rewrite, tap and error
// hooks (faceWay), its bound, its report of the call.

// faceSync is a sync or flex call of a face on its way through the
// face's reverse proxy; it rides in the request's context. Its fields are
// written by the goroutine serving the call, or by the reverse proxy's
// transport, hooks and copy, which that goroutine waits for.
type faceSync struct {
	c      *call
	caller context.Context // the caller's context, not the bounded one
	bound  *callBound
	flex   flexWire      // how the face's API takes flex calls
	served llmfleet.Tier // the tier asked for on the last attempt
	// tap is the answer's body as the face's tap reads it, once its
	// headers came (*openAITap, *geminiBody).
	tap    io.ReadCloser
	failed bool // no answer came: the error handler answered
	// sent says an attempt began to go upstream (its headers were
	// written) and may be billed: no answer it got says otherwise (a shed
	// flex attempt is not billed). A call cut while it is false, before
	// its request went out or waiting between attempts, was billed
	// nothing.
	sent atomic.Bool
	// wrote says the last flex attempt was written whole upstream.
	wrote atomic.Bool
}

type faceSyncKey struct{}

// faceSyncOf returns the sync or flex call r carries, nil for another
// request.
func faceSyncOf(r *http.Request) *faceSync {
	fs, _ := r.Context().Value(faceSyncKey{}).(*faceSync)
	return fs
}

// syncThrough sends the call of fs, whose upstream request is up (its
// path the endpoint's), through the reverse proxy of the face mounted
// under prefix, within hard (0: none) and the upstream timeout given.
// The caller reports the call once this returns, deferred: the reverse
// proxy aborts the handler (http.ErrAbortHandler) when an answer breaks
// off.
func (f *forwarder) syncThrough(w http.ResponseWriter, up *http.Request, fs *faceSync, prefix string, hard, timeout time.Duration) {
	ctx, b := f.s.bound(up.Context(), hard, timeout)
	defer b.release()
	fs.caller, fs.bound, fs.served = up.Context(), b, llmfleet.TierStandard
	// An attempt whose headers went out may be billed: from then on the
	// upstream may get it whole before the call hears that it did.
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteHeaders: func() { fs.sent.Store(true) }})
	up = up.WithContext(context.WithValue(ctx, faceSyncKey{}, fs))
	body := []byte(fs.c.req.Body)
	up.Body, up.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	w.Header().Set(HeaderRoute, string(fs.c.route))
	f.to(prefix).rp.ServeHTTP(w, up)
}

// sendSync sends a sync or flex call (the forwarder's transport) and
// returns its answer, unless the call was cut first.
func (f *forwarder) sendSync(req *http.Request, fs *faceSync) (*http.Response, error) {
	res, tier, err := f.attempts(req, fs)
	fs.served = tier
	if err == nil && !fs.bound.answered() {
		res.Body.Close()
		return nil, errCut
	}
	return res, err
}

// attempts sends the call of fs upstream through next, a flex one
// through the engine's flex executor (flex.go), the tier asked for as
// its flexWire says. It returns the response to pass on (any status) and
// the tier asked for on the last attempt.
func (f *forwarder) attempts(req *http.Request, fs *faceSync) (*http.Response, llmfleet.Tier, error) {
	c := fs.c
	if c.route != llmfleet.RouteFlex {
		res, err := f.next.RoundTrip(req)
		return res, llmfleet.TierStandard, err
	}
	body := []byte(c.req.Body)
	send := func(b []byte) func(context.Context) (*http.Response, error) {
		return func(ctx context.Context) (*http.Response, error) {
			return f.next.RoundTrip(withBody(ctx, req, b))
		}
	}
	flex := send(fs.flex.body(body))
	attempt := func(ctx context.Context) (*http.Response, error) {
		fs.wrote.Store(false)
		return flex(httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteRequest: func(w httptrace.WroteRequestInfo) {
			fs.wrote.Store(w.Err == nil)
		}}))
	}
	givenUp := func() {
		if fs.wrote.Load() { // an attempt given up before it was sent costs nothing
			f.obs.givenUp(fs.flex.provider, c)
		}
	}
	return flexCall{exec: f.flex, wire: fs.flex, c: c, attempt: attempt, standard: send(body),
		shed: func() { fs.sent.Store(false) }, givenUp: givenUp}.run(req.Context())
}

// withBody returns a copy of req, an upstream request, within ctx and
// with body b.
func withBody(ctx context.Context, req *http.Request, b []byte) *http.Request {
	r := req.Clone(ctx)
	r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	return r
}
