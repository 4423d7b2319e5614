package proxy

import (
	"context"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/geminiwire"
)

// This file holds the Gemini face's way upstream: its reverse proxy for
// the pass-through paths, and its sync and flex routes, which send the
// call themselves through the forwarder's transport, flex attempts through
// the engine's flex executor, and pass the answer on as it streams while
// reading its usage for the ledger.

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
	return faceWay{up: g.up, rewrite: g.rewrite, modify: g.uploadURL, onError: g.unreachable}
}

// upstream is the Gemini face's reverse proxy.
func (f geminiFace) upstream() http.Handler { return f.s.fwd.to(GeminiPrefix).rp }

// unreachable answers a pass-through request that got no answer.
func (g geminiForwarder) unreachable(w http.ResponseWriter, r *http.Request, err error) {
	g.s.log.Warn("gemini upstream unreachable", "path", r.URL.Path, "err", err)
	w.Header().Set("Connection", "close")
	writeGeminiBody(w, http.StatusBadGateway, geminiwire.Envelope(http.StatusBadGateway, "The upstream Gemini API could not be reached."))
}

// sync sends a call routed sync or flex upstream and passes its answer
// on.
func (f geminiFace) sync(w http.ResponseWriter, r *http.Request, c *call) {
	geminiForwarder{s: f.s, up: f.s.fwd.to(GeminiPrefix).up}.serveSync(w, r, c)
}

// rewrite prepares a pass-through request: to the upstream, without the
// proxy's headers, its key in x-goog-api-key (the proxy-held one, if any).
func (g geminiForwarder) rewrite(pr *httputil.ProxyRequest) {
	pr.SetURL(g.up)
	pr.Out.Host = g.up.Host
	dropOwnHeaders(pr.Out.Header)
	c := geminiCredential(pr.In)
	if held, ok := pr.In.Context().Value(upstreamCredential{}).(llmfleet.Credential); ok {
		c = geminiKey(held)
	}
	setGeminiCredential(pr.Out, c)
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
	res, tier, err := s.fwd.attempts(g.request(ctx, r, c), c, geminiFlex())
	gc := &geminiCall{c: c, served: tier}
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
	setGeminiCredential(req, c.req.Credential)
	return withBody(ctx, req, c.req.Body)
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
