package proxy

import (
	"context"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/geminiwire"
)

// This file holds the Gemini face's way upstream: the hooks of its
// reverse proxy, for the pass-through paths and its sync and flex routes
// (facesync.go), whose answers it taps for their usage (gemini_tap.go).

// geminiForwarder sends the Gemini face's calls upstream (up), through
// the transport and flex executor of the Server's forwarder.
type geminiForwarder struct {
	s  *Server
	up *url.URL
}

// way is the Gemini face's way upstream: Server.GeminiUpstream (else
// DefaultGeminiUpstream), the session URLs of uploads pointed at the face.
func (f geminiFace) way(*forwarder) faceWay {
	g := geminiForwarder{s: f.s, up: geminiUpstreamURL(f.s.GeminiUpstream)}
	return faceWay{up: g.up, rewrite: g.rewrite, modify: g.modify, onError: g.unreachable}
}

// upstream is the Gemini face's reverse proxy.
func (f geminiFace) upstream() http.Handler { return f.s.fwd.to(GeminiPrefix).rp }

// unreachable answers a request that got no answer: a sync call as
// failed says, any other 502.
func (g geminiForwarder) unreachable(w http.ResponseWriter, r *http.Request, err error) {
	if gs := faceSyncOf(r); gs != nil {
		gs.failed = true
		g.failed(w, r, gs, gs.bound.cutBy())
		return
	}
	g.s.log.Warn("gemini upstream unreachable", "path", r.URL.Path, "err", err)
	w.Header().Set("Connection", "close")
	writeGeminiBody(w, http.StatusBadGateway, geminiwire.Envelope(http.StatusBadGateway, "The upstream Gemini API could not be reached."))
}

// sync sends a call routed sync or flex upstream and passes its answer
// on.
func (f geminiFace) sync(w http.ResponseWriter, r *http.Request, c *call) {
	geminiForwarder{s: f.s, up: f.s.fwd.to(GeminiPrefix).up}.serveSync(w, r, c)
}

// rewrite prepares an upstream request: to the upstream, without the
// proxy's headers, its key in x-goog-api-key: a sync call's (the
// Request's), without the caller's Accept-Encoding (its usage is read),
// Prefer and Idempotency-Key; a pass-through call's the client's or the
// proxy-held one.
func (g geminiForwarder) rewrite(pr *httputil.ProxyRequest) {
	pr.SetURL(g.up)
	pr.Out.Host = g.up.Host
	dropOwnHeaders(pr.Out.Header)
	if gs := faceSyncOf(pr.In); gs != nil {
		for _, k := range []string{"Accept-Encoding", "Prefer", "Idempotency-Key"} {
			pr.Out.Header.Del(k)
		}
		setGeminiCredential(pr.Out, gs.c.req.Credential)
		return
	}
	c := geminiCredential(pr.In)
	if held, ok := pr.In.Context().Value(upstreamCredential{}).(llmfleet.Credential); ok {
		c = geminiKey(held)
	}
	setGeminiCredential(pr.Out, c)
	pr.Out = g.markEmbedding(pr.In, pr.Out)
	if strings.HasPrefix(pr.In.URL.Path, "/upload/") {
		pr.Out = pr.Out.WithContext(context.WithValue(pr.Out.Context(), inboundBase{}, baseOf(pr.In)))
	}
}

// inboundBase keys, in an upload's upstream request's context, the scheme
// and host the upload came to (baseOf), for its session URL (uploadURL).
type inboundBase struct{}

// baseOf returns the scheme and host the request in came to the proxy
// at: X-Forwarded-Host, if a hop in front set it, else its Host.
func baseOf(in *http.Request) string {
	scheme := "http"
	if in.TLS != nil {
		scheme = "https"
	}
	host := in.Header.Get("X-Forwarded-Host")
	if host == "" {
		host = in.Host
	}
	return scheme + "://" + host
}

// uploadURL points a resumable upload's session URL (x-goog-upload-url)
// at the face, where the upload came to, rather than at the upstream, so
// that the upload's bytes come through the proxy too.
func (g geminiForwarder) uploadURL(resp *http.Response) error {
	u := resp.Header.Get("X-Goog-Upload-Url")
	rest, ok := strings.CutPrefix(u, strings.TrimSuffix(g.up.String(), "/"))
	if !ok || resp.Request == nil {
		return nil
	}
	base, ok := resp.Request.Context().Value(inboundBase{}).(string)
	if !ok {
		return nil
	}
	resp.Header.Set("X-Goog-Upload-Url", base+GeminiPrefix+rest)
	return nil
}

// serveSync makes the call upstream, flex or standard, and streams its
// answer back, reading its usage for the ledger (facesync.go). Its budget
// does not cut it unless it is a hard deadline; the upstream timeout of
// its tier does, while no answer has come.
func (g geminiForwarder) serveSync(w http.ResponseWriter, r *http.Request, c *call) {
	s := g.s
	hard, spent := c.hardLeft(s.clock.Now())
	if spent {
		g.observe(c, "", "", nil, geminiwire.StatusDeadlineExceeded, false)
		writeGeminiBody(w, http.StatusGatewayTimeout, geminiwire.Envelope(http.StatusGatewayTimeout, s.cutMessage(callCutHard, c.budget, "upstream Gemini API")))
		return
	}
	gs := &faceSync{c: c, flex: geminiFlex()}
	defer g.answered(gs) // reported even when the answer broke off
	s.fwd.syncThrough(w, withPath(r, c.endpoint, ""), gs, GeminiPrefix, hard, tierTimeout(s, geminiProvider, llmfleet.TierOf(c.route)))
}

// geminiFlex is how the Gemini API takes flex calls: serviceTier "flex";
// a 503 or 429 sheds, a 400 naming the service tier refuses
// (geminiwire.Reason).
func geminiFlex() flexWire {
	return flexWire{provider: geminiProvider, member: "serviceTier", value: `"` + geminiwire.TierFlex + `"`,
		reads: func(st int) bool {
			return st == http.StatusServiceUnavailable || st == http.StatusTooManyRequests || st == http.StatusBadRequest
		},
		reason: func(st int, b []byte) error { return geminiwire.Reason(true, st, b) }}
}
