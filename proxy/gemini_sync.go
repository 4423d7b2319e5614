package proxy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/geminiwire"
	"github.com/llmfleet/llmfleet/jsonmember"
)

// This file holds the Gemini face's way upstream: its reverse proxy for
// the pass-through paths, and its sync and flex routes, which send the
// call themselves through the forwarder's transport, flex attempts through
// the engine's flex executor, and pass the answer on as it streams while
// reading its usage for the ledger.

// geminiForwarder sends the Gemini face's calls upstream, through the
// transport and flex executor of the Server's forwarder.
type geminiForwarder struct {
	s  *Server
	up *url.URL
	rp *httputil.ReverseProxy
}

// geminiFwdOf returns the Gemini forwarder of s (initialised).
func geminiFwdOf(s *Server) geminiForwarder {
	g := geminiForwarder{s: s, up: geminiUpstreamURL(s.GeminiUpstream)}
	g.rp = &httputil.ReverseProxy{Rewrite: g.rewrite, Transport: s.fwd.next, ModifyResponse: g.uploadURL,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			s.log.Warn("gemini upstream unreachable", "path", r.URL.Path, "err", err)
			w.Header().Set("Connection", "close")
			writeGeminiBody(w, http.StatusBadGateway, geminiwire.Envelope(http.StatusBadGateway, "The upstream Gemini API could not be reached."))
		}}
	return g
}

// sync sends a call routed sync or flex upstream and passes its answer
// on.
func (f geminiFace) sync(w http.ResponseWriter, r *http.Request, c *call) {
	geminiFwdOf(f.s).serveSync(w, r, c)
}

// rewrite prepares a pass-through request: to the upstream, without the
// proxy's headers, its key in x-goog-api-key (the proxy-held one, if any).
func (g geminiForwarder) rewrite(pr *httputil.ProxyRequest) {
	pr.SetURL(g.up)
	pr.Out.Host = g.up.Host
	dropOwnHeaders(pr.Out.Header)
	c := credentialFrom(pr.In.Header)
	if held, ok := pr.In.Context().Value(upstreamCredential{}).(llmfleet.Credential); ok {
		c = geminiKey(held)
	}
	setGeminiCredential(pr.Out.Header, c)
}

// uploadURL points a resumable upload's session URL (x-goog-upload-url)
// at the face rather than at the upstream, so that the upload's bytes
// come through the proxy too.
func (g geminiForwarder) uploadURL(resp *http.Response) error {
	u := resp.Header.Get("X-Goog-Upload-Url")
	rest, ok := strings.CutPrefix(u, strings.TrimSuffix(g.up.String(), "/"))
	if !ok || resp.Request == nil {
		return nil
	}
	in := resp.Request
	scheme := "http"
	if in.TLS != nil {
		scheme = "https"
	}
	host := in.Header.Get("X-Forwarded-Host")
	if host == "" {
		host = in.Host
	}
	resp.Header.Set("X-Goog-Upload-Url", scheme+"://"+host+GeminiPrefix+rest)
	return nil
}

// geminiCall is a sync or flex call of the Gemini face on its way
// upstream.
type geminiCall struct {
	c      *call
	served llmfleet.Tier // the tier asked for on the last attempt
}

// serveSync makes the call upstream, flex or standard, and streams its
// answer back, reading its usage for the ledger. Its budget does not cut
// it unless it is a hard deadline; the upstream timeout does, while no
// answer has come.
func (g geminiForwarder) serveSync(w http.ResponseWriter, r *http.Request, c *call) {
	s := g.s
	hard := time.Duration(0)
	if c.hard && c.budget > 0 {
		if hard = c.remaining(s.clock.Now()); hard <= 0 {
			g.observe(c, "", "", nil, geminiwire.StatusDeadlineExceeded, false)
			writeGeminiBody(w, http.StatusGatewayTimeout, geminiwire.Envelope(http.StatusGatewayTimeout, s.cutMessage(callCutHard, c.budget, "upstream Gemini API")))
			return
		}
	}
	ctx, b := s.bound(r.Context(), hard, tierTimeout(s, geminiProvider, llmfleet.TierOf(c.route)))
	defer b.release()
	gc := &geminiCall{c: c, served: llmfleet.TierStandard}
	req := g.request(ctx, r, c)
	res, err := g.send(req, gc)
	if err == nil && !b.answered() {
		res.Body.Close()
		err = errCut
	}
	w.Header().Set(HeaderRoute, string(c.route))
	if err != nil {
		g.failed(w, r, gc, b.cutBy())
		return
	}
	g.pass(w, r, gc, res)
}

// request returns the upstream request of a sync call: the path called
// (its ?alt=sse kept), the caller's headers but the proxy's own, the
// hop-by-hop ones and Accept-Encoding (the usage is read), and the call's
// credential.
func (g geminiForwarder) request(ctx context.Context, r *http.Request, c *call) *http.Request {
	u := *g.up
	u.Path = strings.TrimSuffix(u.Path, "/") + c.endpoint
	u.RawPath, u.RawQuery = "", r.URL.RawQuery
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), nil)
	for k, v := range r.Header {
		req.Header[k] = v
	}
	dropOwnHeaders(req.Header)
	for _, k := range []string{"Connection", "Keep-Alive", "Te", "Trailer", "Transfer-Encoding", "Upgrade", "Accept-Encoding", "Content-Length", "Prefer", "Idempotency-Key"} {
		req.Header.Del(k)
	}
	setGeminiCredential(req.Header, c.req.Credential)
	return withBody(ctx, req, c.req.Body)
}

// send sends the call, on the flex route through the engine's flex
// executor: each attempt asks serviceTier "flex", and a shed or refused
// one ends the attempt for the executor to decide; the standard tier
// then, if it says so.
func (g geminiForwarder) send(req *http.Request, gc *geminiCall) (*http.Response, error) {
	next := g.s.fwd.next
	c := gc.c
	if c.route != llmfleet.RouteFlex {
		return next.RoundTrip(req)
	}
	flexBody, err := jsonmember.Set(c.req.Body, "serviceTier", []byte(`"`+geminiwire.TierFlex+`"`))
	if err != nil {
		flexBody = c.req.Body
	}
	ctx := req.Context()
	var res *http.Response
	gc.served = llmfleet.TierFlex
	answered, err := g.s.fwd.flex.ExecuteFlex(ctx, geminiProvider, c.model, c.arrived, c.budget, func(actx context.Context) error {
		var err error
		res, err = geminiFlexTry(ctx, actx, next, withBody(ctx, req, flexBody))
		return err
	})
	switch {
	case answered, errors.Is(err, errPassOn):
		return res, nil
	case err != nil:
		return nil, err
	}
	gc.served = llmfleet.TierStandard
	return next.RoundTrip(withBody(ctx, req, c.req.Body))
}

// geminiFlexTry sends one flex attempt. The executor's context (actx)
// bounds the wait for its answer's headers, not the answer: the attempt
// runs in a context of the call's that actx cancels only until then. A
// shed (503, 429) or a refusal of the tier (400) is the executor's error
// (geminiwire.Reason); any other error answer is passed on.
func geminiFlexTry(ctx, actx context.Context, next http.RoundTripper, req *http.Request) (*http.Response, error) {
	rctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(actx, func() { cancel(context.Cause(actx)) })
	res, err := next.RoundTrip(req.WithContext(rctx))
	if !stop() && err == nil { // actx ended as the answer came: too late
		res.Body.Close()
		err = context.Cause(actx)
	}
	if err != nil {
		cancel(nil)
		return nil, err
	}
	switch res.StatusCode {
	case http.StatusServiceUnavailable, http.StatusTooManyRequests, http.StatusBadRequest:
	default:
		res.Body = releasingBody{res.Body, func() { cancel(nil) }}
		if res.StatusCode/100 == 2 {
			return res, nil
		}
		return res, errPassOn
	}
	b, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	res.Body.Close()
	cancel(nil)
	if reason := geminiwire.Reason(true, res.StatusCode, b); reason != nil {
		return nil, reason
	}
	res.Body = io.NopCloser(bytes.NewReader(b))
	return res, errPassOn
}
