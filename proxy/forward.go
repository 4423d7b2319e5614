package proxy

import (
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/llmfleet/llmfleet"
)

// forwarder sends calls upstream as they came, for every face, through
// one httputil.ReverseProxy setup (newReverseProxy), one reverse proxy a
// face, built when the face is mounted from the faceWay it gives: the
// pass-through paths and the sync route, whose calls it bounds
// (deadline.go), retries within their budgets (syncbudget.go), sends to
// the flex tier (flex.go) and observes (observer.go, usagetap.go). It is
// the transport of its reverse proxies: a call of the sync route rides in
// its request's context, every other request goes to next as it is. It is
// built once, when the Server is first used, and read only after.
type forwarder struct {
	s       *Server // the cut answers' words (Server.writeCut, cutMessage) and bounds
	log     *slog.Logger
	clock   llmfleet.Clock
	timeout time.Duration // the upstream timeout; 0 or less: none
	obs     *syncObserver
	next    http.RoundTripper

	// faces are the ways upstream of the faces mounted, by mount prefix.
	faces map[string]faceUpstream

	flex llmfleet.FlexExecutor // the engine's, or one attempt without one
}

// newForwarder builds the forwarder of s, once its settings are read
// (Server.init).
func newForwarder(s *Server) *forwarder {
	f := &forwarder{s: s, log: s.log, clock: s.clock, timeout: s.upstreamTimeout,
		next: s.Transport, flex: flexExecutor(s.Submitter), faces: map[string]faceUpstream{}}
	if f.next == nil {
		dt := http.DefaultTransport.(*http.Transport).Clone()
		dt.MaxIdleConns = 1024
		dt.MaxIdleConnsPerHost = 256
		f.next = dt
	}
	f.obs = &syncObserver{observe: s.Observe, upstreamError: s.UpstreamError, provider: s.Provider, clock: s.clock}
	f.obs.cache, _ = s.Submitter.(llmfleet.CacheObserver)
	return f
}

// faceWay is what a face gives the forwarder when it is mounted: the base
// URL of its upstream and the hooks of its reverse proxy.
type faceWay struct {
	up      *url.URL
	rewrite func(*httputil.ProxyRequest)
	modify  func(*http.Response) error
	onError func(http.ResponseWriter, *http.Request, error)
}

// faceUpstream is a mounted face's way upstream: its upstream's base URL
// and its reverse proxy.
type faceUpstream struct {
	up *url.URL
	rp *httputil.ReverseProxy
}

// mount builds the reverse proxy of the face mounted under prefix (Server.init).
func (f *forwarder) mount(prefix string, w faceWay) {
	f.faces[prefix] = faceUpstream{up: w.up, rp: f.newReverseProxy(w.rewrite, w.modify, w.onError)}
}

// to returns the way upstream of the face mounted under prefix.
func (f *forwarder) to(prefix string) faceUpstream { return f.faces[prefix] }

// newReverseProxy returns a reverse proxy of the forwarder's: its calls
// go through the forwarder, copy buffers are pooled, answers are flushed
// as ReverseProxy does itself with FlushInterval 0 (an event stream, and
// a response of unknown length, at once; a JSON answer of known length
// without a flush timer), and hop-by-hop headers are dropped both ways.
func (f *forwarder) newReverseProxy(rewrite func(*httputil.ProxyRequest), modify func(*http.Response) error,
	onError func(http.ResponseWriter, *http.Request, error)) *httputil.ReverseProxy {
	return &httputil.ReverseProxy{
		Rewrite:        rewrite,
		Transport:      f,
		FlushInterval:  0,
		BufferPool:     &bufferPool{},
		ErrorHandler:   onError,
		ModifyResponse: modify,
		ErrorLog:       slog.NewLogLogger(f.log.Handler(), slog.LevelWarn),
	}
}

// RoundTrip sends a call of the sync route as its bound, budget and route
// allow, and every other request through next as it is.
func (f *forwarder) RoundTrip(req *http.Request) (*http.Response, error) {
	if sc := syncCallOf(req); sc != nil && sc.bound != nil {
		return f.sendBounded(req, sc)
	}
	if fs := faceSyncOf(req); fs != nil {
		return f.sendSync(req, fs)
	}
	return f.next.RoundTrip(req)
}

// dropOwnHeaders removes the proxy's own headers (llmfleet-*) from h.
func dropOwnHeaders(h http.Header) {
	for k := range h {
		if len(k) >= 9 && strings.EqualFold(k[:9], "llmfleet-") {
			delete(h, k)
		}
	}
}

// accountHeaders are those dropAccountHeaders drops; the first two,
// openAIAccountHeaders, pick the organization and the project an OpenAI
// key acts in.
var (
	accountHeaders       = []string{"OpenAI-Organization", "OpenAI-Project", "Anthropic-Workspace-Id", "Anthropic-User-Profile-Id"}
	openAIAccountHeaders = accountHeaders[:2]
)

// dropAccountHeaders drops from h, a call going upstream under a
// proxy-held key, the headers by which a call picks the account its key
// acts in (OpenAI's organization and project, Anthropic's workspace) or
// the end user it is made for (Anthropic's user profile). The key is the
// operator's, and so are those choices (the key's own apply): else a
// client could act in another project or workspace of a key that spans
// several, among what other applications keep there, or have its traffic
// taken for another client's user.
func dropAccountHeaders(h http.Header) {
	for _, k := range accountHeaders {
		h.Del(k)
	}
}

// heldKey reports whether r goes upstream under a proxy-held key.
func heldKey(r *http.Request) bool {
	_, ok := r.Context().Value(upstreamCredential{}).(llmfleet.Credential)
	return ok
}

// rewrite prepares an upstream request of the Anthropic face, to up.
func (f *forwarder) rewrite(pr *httputil.ProxyRequest, up *url.URL) {
	pr.SetURL(up)
	dropOwnHeaders(pr.Out.Header)
	if c, ok := pr.In.Context().Value(upstreamCredential{}).(llmfleet.Credential); ok {
		setHeaderCredential(pr.Out, c)
		dropAccountHeaders(pr.Out.Header)
	}
	prepareObserved(pr)
}

// upstreamError answers a request of the Anthropic face whose upstream
// call failed.
//
// The answer closes the connection: the request body may be left unread
// (a call refused at the dial never reads it), and net/http, in the full
// duplex mode the streaming routes use (fullDuplex), panics with "invalid
// concurrent Body.Read call" when it reads the next request of a
// connection whose handler left its body so.
func (f *forwarder) upstreamError(w http.ResponseWriter, r *http.Request, err error) {
	w.Header().Set("Connection", "close")
	if sc := syncCallOf(r); sc != nil {
		if state := sc.bound.cutBy(); state == callCutHard || state == callCutTimeout {
			f.callCut(w, r, sc, state, sc.inFlight())
			return
		}
	}
	f.obs.failure(r)
	if bodyTimedOut(r) {
		writeAPIError(w, bodyTooSlow)
		return
	}
	if r.Context().Err() != nil {
		return // the client left
	}
	f.log.Warn("upstream call failed", "path", r.URL.Path, "err", err)
	writeAPIError(w, &apiError{http.StatusBadGateway, "api_error", "llmfleet could not reach the upstream API"})
}

// bufferPool recycles the copy buffers of the reverse proxy. It pools
// *[32 KiB]byte: a pointer to an array converts to and from a slice
// without a new allocation at each Put (as &buf of a slice would be).
type bufferPool struct{ p sync.Pool }

// copyBuffer is the size of a copy buffer, as ReverseProxy's own.
const copyBuffer = 32 << 10

func (b *bufferPool) Get() []byte {
	if v, ok := b.p.Get().(*[copyBuffer]byte); ok {
		return v[:]
	}
	return new([copyBuffer]byte)[:]
}

func (b *bufferPool) Put(buf []byte) {
	if cap(buf) < copyBuffer {
		return
	}
	b.p.Put((*[copyBuffer]byte)(buf[:copyBuffer]))
}
