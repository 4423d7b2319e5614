package proxy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/llmfleet/llmfleet"
)

// SDKRouter routes the calls of a provider SDK in process, as the Server
// routes them over HTTP: the SDK middlewares of packages
// middleware/anthropicmw (anthropic-sdk-go) and middleware/openaimw
// (openai-go) are its methods. Each method has the shape of both SDKs'
// option.Middleware: it takes a request the SDK is about to send and
// next, which sends it on through the SDK's own HTTP client.
type SDKRouter struct{ s *Server }

// Next sends a request on, as an SDK middleware's next does.
type Next = func(*http.Request) (*http.Response, error)

// SDK returns the Server's router of SDK calls. Upstream and Transport
// are not used by it: a call routed sync goes on through the SDK's own
// HTTP client.
func (s *Server) SDK() *SDKRouter {
	s.init()
	return &SDKRouter{s}
}

// Messages routes the create-message calls of anthropic-sdk-go
// (client.Messages.New and NewStreaming) whose context carries a latency
// budget (llmfleet.WithBudget) exactly as the proxy routes POST
// /v1/messages: a call routed sync goes on through next; a batched one is
// answered from its batch, as a Message or as a synthesised event stream.
// A call without a budget takes Server.DefaultBudget, as in the proxy (0,
// the default: sync, unchanged); every other call goes on unchanged. A
// call routed sync is the SDK's own: its context, the SDK's timeout and
// its retries govern it, not the proxy's retries nor
// Server.UpstreamTimeout, and its budget does not cut it unless the call
// asks for a hard deadline (option.WithHeader("llmfleet-deadline",
// "hard")), when it is answered 504 timeout_error once its budget has run
// out; a batched one's budget counts from the middleware's entry, as the
// proxy's from a request's arrival.
func (sr *SDKRouter) Messages(req *http.Request, next Next) (*http.Response, error) {
	s := sr.s
	if req.Method != http.MethodPost || !strings.HasSuffix(req.URL.Path, "/v1/messages") {
		return next(req)
	}
	p := pipeline{s, anthropicFace{s: s}}
	c, e := p.plan(req, true)
	if e != nil {
		return serveInProcess(req, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set(HeaderRoute, string(c.route))
			setReason(w.Header(), c)
			setRefusalHeaders(w.Header(), e)
			p.f.refuse(w, e)
		}), nil
	}
	if c.route == llmfleet.RouteBatch {
		return serveInProcess(req, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set(HeaderRoute, string(c.route))
			setReason(w.Header(), c)
			if c.async {
				p.enqueue(w, r, c)
				return
			}
			p.batch(w, r, c)
		}), nil
	}
	for k := range req.Header {
		if len(k) >= 9 && strings.EqualFold(k[:9], "llmfleet-") {
			req.Header.Del(k)
		}
	}
	if c.cred != nil {
		setCredential(req.Header, *c.cred)
	}
	if c.body != nil {
		body := c.body
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		req.ContentLength = int64(len(body))
	}
	resp, err := s.nextWithin(req, c.hard && c.budget > 0, c.remaining(s.clock.Now()), next, func(w http.ResponseWriter, _ *http.Request) {
		s.writeCut(w, callCutHard, c.budget)
	})
	if resp != nil {
		resp.Header.Set(HeaderRoute, string(llmfleet.RouteSync))
		setReason(resp.Header, c)
	}
	return resp, err
}

// getOf returns a GET of path (an API path of r's face) with query, made
// of r within ctx: its credential and the rest of its headers, no body,
// its answer asked for plain (read here).
func getOf(ctx context.Context, r *http.Request, path, query string) *http.Request {
	get := r.Clone(ctx)
	get.Method, get.Body, get.ContentLength = http.MethodGet, http.NoBody, 0
	u := *r.URL
	u.Path, u.RawPath, u.RawQuery = path, "", query
	get.URL = &u
	get.Header.Del("Content-Type")
	get.Header.Del("Accept-Encoding")
	return get
}

// serveInProcess runs h on req in a goroutine of its own and returns the
// response it writes as soon as its status is written; the body streams
// from h as it writes. Closing the body cancels h's request context. The
// goroutine ends when h returns. A handler that aborts (panics with
// http.ErrAbortHandler, as a reverse proxy does when the answer it copies
// breaks off under a server's request) ends the body in an error, not in
// its end.
func serveInProcess(req *http.Request, h http.HandlerFunc) *http.Response {
	ctx, cancel := context.WithCancel(req.Context())
	pr, pw := io.Pipe()
	w := &pipeWriter{
		header: make(http.Header),
		req:    req,
		pw:     pw,
		body:   &pipeBody{pr: pr, cancel: cancel},
		ready:  make(chan *http.Response, 1),
	}
	go func() {
		defer cancel()
		defer w.finish()
		defer func() {
			if v := recover(); v != nil {
				if v != http.ErrAbortHandler {
					panic(v)
				}
				w.pw.CloseWithError(errAborted) // the first error the reader sees
			}
		}()
		h(w, req.WithContext(ctx))
	}()
	return <-w.ready
}

// errAborted ends the body of an in-process response whose handler aborted.
var errAborted = errors.New("llmfleet: the answer broke off")

// pipeWriter is an http.ResponseWriter whose response is read in process.
type pipeWriter struct {
	header http.Header
	req    *http.Request
	pw     *io.PipeWriter
	body   *pipeBody
	ready  chan *http.Response

	resp *http.Response
}

func (w *pipeWriter) Header() http.Header { return w.header }

func (w *pipeWriter) WriteHeader(code int) {
	if w.resp != nil {
		return
	}
	resp := &http.Response{
		Status:        strconv.Itoa(code) + " " + http.StatusText(code),
		StatusCode:    code,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        w.header.Clone(),
		Body:          w.body,
		ContentLength: -1,
		Request:       w.req,
	}
	if n, err := strconv.ParseInt(w.header.Get("Content-Length"), 10, 64); err == nil {
		resp.ContentLength = n
	}
	if names := w.header.Values("Trailer"); len(names) > 0 {
		resp.Header.Del("Trailer")
		resp.Trailer = make(http.Header)
		for _, n := range names {
			resp.Trailer[http.CanonicalHeaderKey(n)] = nil
		}
	}
	w.resp = resp
	w.ready <- resp
}

func (w *pipeWriter) Write(b []byte) (int, error) {
	if w.resp == nil {
		w.WriteHeader(http.StatusOK)
	}
	return w.pw.Write(b)
}

// Flush implements http.Flusher; the pipe holds nothing back.
func (w *pipeWriter) Flush() {}

// finish sets the trailers and ends the body.
func (w *pipeWriter) finish() {
	if w.resp == nil {
		w.WriteHeader(http.StatusOK)
	}
	for k := range w.resp.Trailer {
		w.resp.Trailer[k] = w.header.Values(k)
	}
	w.pw.Close()
}

// pipeBody is the body of an in-process response.
type pipeBody struct {
	pr     *io.PipeReader
	cancel context.CancelFunc
}

func (b *pipeBody) Read(p []byte) (int, error) { return b.pr.Read(p) }

// Close stops the handler: its request context is canceled.
func (b *pipeBody) Close() error {
	b.cancel()
	return b.pr.Close()
}
