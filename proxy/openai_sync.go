package proxy

import (
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/openaiwire"
)

// This file holds the OpenAI face's sync and flex routes: the call goes
// upstream through the forwarder's reverse proxy of the face, as a
// pass-through call does, its answer streams back through a tap that reads
// its usage for the ledger (openaitap.go).

// serveOpenAISync makes the call upstream, flex or standard, and streams
// its answer back, reading its usage for the ledger. Its budget does not
// cut it unless it is a hard deadline (c.hard); the upstream timeout
// does, while no answer has come (deadline.go).
func (f *forwarder) serveOpenAISync(w http.ResponseWriter, r *http.Request, c *openAICall) {
	hard, spent := c.hardLeft(f.clock.Now())
	if spent {
		f.obs.openAI(c, "", nil, "timeout_error", false)
		writeOpenAIError(w, http.StatusGatewayTimeout, "timeout_error", "", "", f.s.cutMessage(callCutHard, c.budget, "upstream OpenAI API"))
		return
	}
	oc := &faceSync{c: c, flex: openAIFlex()}
	up := withPath(r, c.endpoint, "")
	up.URL.RawQuery = ""
	defer f.openAIAnswered(oc) // reported even when the answer broke off
	f.syncThrough(w, up, oc, OpenAIPrefix, hard, f.timeout)
}

// openAIAnswered reports a call once its answer has been passed on, or
// broke off; one that got no answer was reported by openAIError.
func (f *forwarder) openAIAnswered(oc *faceSync) {
	t, _ := oc.tap.(*openAITap)
	if t != nil && !oc.failed && f.ledgeredElsewhere(oc, t) {
		return
	}
	switch {
	case oc.failed || t == nil:
	case t.status >= 400:
		kind := openaiwire.ErrorOf(t.status, t.json.kept(), "").Type
		f.obs.failed(kind)
		f.obs.openAI(oc.c, oc.served, t, kind, false)
	case t.failed != "":
		// A stream that failed after its 200: billed for the usage read
		// so far, else estimated (its request was carried out).
		f.obs.failed(t.failed)
		f.obs.openAI(oc.c, oc.served, t, t.failed, true)
	case !t.eof && oc.caller.Err() != nil:
		// The caller left during the answer, which is billed all the same.
		f.obs.openAI(oc.c, oc.served, t, "caller_canceled", true)
	case !t.eof:
		// Broken off upstream: billed for the usage read so far, else
		// estimated.
		f.obs.failed("network")
		f.obs.openAI(oc.c, oc.served, t, "api_error", true)
	default:
		f.obs.openAI(oc.c, oc.served, t, "ok", false)
	}
}

// way is the OpenAI face's way upstream: Server.OpenAIUpstream (else
// DefaultOpenAIUpstream), the answers of its sync calls tapped
// (tapOpenAI).
func (f openAIFace) way(fw *forwarder) faceWay {
	up := openAIUpstreamURL(f.s.OpenAIUpstream)
	return faceWay{up: up, rewrite: func(pr *httputil.ProxyRequest) { fw.rewriteOpenAI(pr, up) },
		modify: fw.tapOpenAI, onError: fw.openAIError}
}

// rewriteOpenAI prepares an upstream request of the OpenAI face: a sync
// call goes with its credential (the client's, or the proxy-held key) and
// without the caller's Accept-Encoding, so that its usage can be read; a
// pass-through call with the proxy-held key, if any.
func (f *forwarder) rewriteOpenAI(pr *httputil.ProxyRequest, up *url.URL) {
	pr.SetURL(up)
	pr.Out.Host = up.Host
	dropOwnHeaders(pr.Out.Header)
	if heldKey(pr.In) {
		dropAccountHeaders(pr.Out.Header)
	}
	if oc := faceSyncOf(pr.In); oc != nil {
		pr.Out.Header.Del("Accept-Encoding")
		openAIKeys().set(pr.Out, oc.c.req.Credential)
		return
	}
	if c, ok := pr.In.Context().Value(upstreamCredential{}).(llmfleet.Credential); ok {
		openAIKeys().set(pr.Out, c)
	}
	if responseRead(pr.Out.Method, pr.Out.URL.Path) {
		pr.Out = f.markResponseRead(pr.In, pr.Out)
	}
}

// tapOpenAI is the OpenAI face's ModifyResponse: the answer to a sync
// call is read as it streams by (openAITap), and, for a /v1/responses call
// with proxy-held keys, its response recorded as its client's.
func (f *forwarder) tapOpenAI(resp *http.Response) error {
	oc := faceSyncOf(resp.Request)
	if oc == nil {
		ownAnswer(f.s, resp, openAIAnswerIDs) // a response of the client's, read by id
		f.backgroundEnd(resp)
		return nil
	}
	c := oc.c
	if c.owner != "" && resp.StatusCode == http.StatusOK {
		resp.Body = bookOf(f.s).ownedResponses(oc.caller, c.owner, resp)
	}
	resp.Header.Del(HeaderRoute) // the proxy's own, set by serveOpenAISync
	oc.tap = &openAITap{rc: resp.Body, status: resp.StatusCode,
		sse: strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")}
	resp.Body = oc.tap
	return nil
}

// openAIError answers a request of the OpenAI face that got no answer:
// a sync call as openAICallFailed says, any other 502.
func (f *forwarder) openAIError(w http.ResponseWriter, r *http.Request, err error) {
	if oc := faceSyncOf(r); oc != nil {
		oc.failed = true
		f.openAICallFailed(w, r, oc, oc.bound.cutBy())
		return
	}
	f.log.Warn("openai upstream unreachable", "path", r.URL.Path, "err", err)
	w.Header().Set("Connection", "close")
	writeOpenAIError(w, http.StatusBadGateway, "api_error", "", "", "The upstream OpenAI API could not be reached.")
}

// openAICallFailed answers and reports a sync or flex call that got no
// answer: cut by state (callCutHard, callCutTimeout: 504 timeout_error),
// left by its caller, or failed to reach the upstream (502). A call cut
// while an attempt it sent may be billed (oc.sent) has its usage
// estimated.
func (f *forwarder) openAICallFailed(w http.ResponseWriter, r *http.Request, oc *faceSync, state int32) {
	c, served, sent := oc.c, oc.served, oc.sent.Load()
	switch {
	case state == callCutHard || state == callCutTimeout:
		f.log.Info("sync call cut before the upstream answered", "path", r.URL.Path, "route", c.route,
			"budget", c.budget, "upstream_timeout", state == callCutTimeout)
		f.obs.openAI(c, served, nil, "timeout_error", sent)
		writeOpenAIError(w, http.StatusGatewayTimeout, "timeout_error", "", "", f.s.cutMessage(state, c.budget, "upstream OpenAI API"))
	case r.Context().Err() != nil:
		f.obs.openAI(c, served, nil, "caller_canceled", sent)
	default:
		f.obs.failed("network")
		f.obs.openAI(c, served, nil, "api_error", sent) // written: may have been carried out
		writeOpenAIError(w, http.StatusBadGateway, "api_error", "", "", "The upstream OpenAI API could not be reached.")
	}
}
