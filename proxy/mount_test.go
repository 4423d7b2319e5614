package proxy

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
)

// echoFace is a made-up third provider API, written as a next face would
// be: only what differs (parsing, words, renderings, pass-through rules);
// the pipeline and the mount do the rest. Its calls are POST
// /echo/v1/say with a text body, its answers and errors plain text.
type echoFace struct{ s *Server }

func (f echoFace) traits() faceTraits {
	return faceTraits{routes: [3]llmfleet.Route{llmfleet.RouteSync, llmfleet.RouteBatch},
		stream: streamShape{eager: true, ping: func(b []byte) []byte { return append(b, "ping\n"...) }, begin: func(h http.Header, _ bool) { h.Set("Content-Type", "text/plain") }}}
}
func (f echoFace) admit(*http.Request, *call) *refusal { return nil }
func (f echoFace) route(r *http.Request, c *call, force llmfleet.Route) *refusal {
	body, e := f.s.bodies.read(r)
	if e != nil {
		return refusalOf(e)
	}
	c.req = &llmfleet.Request{Provider: "echo", Body: body}
	c.stream = r.URL.Query().Has("stream")
	c.route = force
	if force == "" {
		c.route = f.s.Submitter.Plan(c.budget, c.req)
	}
	return nil
}
func (f echoFace) note(*http.Request, *call, *refusal) {}
func (f echoFace) refuse(w http.ResponseWriter, e *refusal) {
	http.Error(w, "echo refuses: "+e.msg, e.status)
}
func (f echoFace) says(k refusalKind, arg string) *refusal {
	return &refusal{status: http.StatusBadRequest, typ: "echo_error", msg: "refusal " + arg}
}
func (f echoFace) fail(_ context.Context, w http.ResponseWriter, _ *call, err error, _ bool) {
	http.Error(w, "echo failed: "+err.Error(), http.StatusBadGateway)
}
func (f echoFace) answer(_ context.Context, w http.ResponseWriter, _ *call, resp *llmfleet.Response) {
	io.WriteString(w, "batched: "+string(resp.Body))
}
func (f echoFace) endStream(_ context.Context, p *streamPark, _ *call, resp *llmfleet.Response, _ error, _ bool) {
	io.WriteString(p.w, "streamed: "+string(resp.Body))
}
func (f echoFace) sync(w http.ResponseWriter, _ *http.Request, c *call) {
	io.WriteString(w, "sync: "+string(c.req.Body))
}
func (f echoFace) stored(context.Context, http.ResponseWriter, *llmfleet.StoredRequest) {}
func (f echoFace) prefix() (string, string)                                             { return "/echo", "/v1/" }
func (f echoFace) hold(p llmfleet.Credential) (llmfleet.Credential, *refusal)           { return p, nil }
func (f echoFace) forCall(string, string) mountedFace                                   { return f }
func (f echoFace) refs([]byte, func(objectRef)) func([]byte) bool                       { return nil }
func (f echoFace) routed(method, path string) bool {
	return method == http.MethodPost && path == "/v1/say"
}
func (f echoFace) owned(string) bool                             { return false }
func (f echoFace) serveOwned(http.ResponseWriter, *http.Request) {}
func (f echoFace) shared(string, string) bool                    { return true }
func (f echoFace) way(*forwarder) faceWay                        { return faceWay{} }
func (f echoFace) upstream() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "upstream: "+r.URL.Path) })
}

// echoSubmitter batches calls whose budget is over a second and answers
// them with their body.
type echoSubmitter struct{}

func (echoSubmitter) Submit(context.Context, time.Duration, *llmfleet.Request) (*llmfleet.Response, error) {
	return nil, llmfleet.ErrClosed
}
func (echoSubmitter) SubmitSync(context.Context, *llmfleet.Request) (*llmfleet.Response, error) {
	return nil, llmfleet.ErrClosed
}
func (echoSubmitter) SubmitBatch(_ context.Context, _ time.Duration, req *llmfleet.Request) (*llmfleet.Response, error) {
	return &llmfleet.Response{Body: req.Body}, nil
}
func (echoSubmitter) Plan(budget time.Duration, _ *llmfleet.Request) llmfleet.Route {
	if budget > time.Second {
		return llmfleet.RouteBatch
	}
	return llmfleet.RouteSync
}
func (echoSubmitter) Stats() llmfleet.Stats { return llmfleet.Stats{} }

// TestMountThirdFace: a face the proxy has never heard of, mounted under
// its prefix, gets the pipeline's routing (budget header, forced route,
// its refusal in its own words), batching and streaming, and the mount's
// pass-through.
func TestMountThirdFace(t *testing.T) {
	s := &Server{Submitter: echoSubmitter{}}
	s.init()
	h := http.HandlerFunc(mount{s, echoFace{s}}.serve)
	for _, c := range []struct {
		method, path, body, budget, route string
		want                              string
	}{
		{"POST", "/echo/v1/say", "hi", "", "", "sync: hi"},
		{"POST", "/echo/v1/say", "hi", "60000", "", "batched: hi"},
		{"POST", "/echo/v1/say?stream", "hi", "", "batch", "streamed: hi"},
		{"POST", "/echo/v1/say", "hi", "", "flex", "echo refuses: The llmfleet-route header must be sync or batch."},
		{"GET", "/echo/v1/models", "", "", "", "upstream: /v1/models"},
		{"GET", "/echo/v2/x", "", "", "", "echo refuses: refusal GET /echo/v2/x"},
	} {
		r := httptest.NewRequest(c.method, c.path, strings.NewReader(c.body))
		if c.budget != "" {
			r.Header.Set(HeaderBudget, c.budget)
		}
		if c.route != "" {
			r.Header.Set(HeaderRoute, c.route)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if got := strings.TrimSpace(w.Body.String()); got != c.want {
			t.Errorf("%s %s (budget %q, route %q): %q, want %q", c.method, c.path, c.budget, c.route, got, c.want)
		}
	}
}
