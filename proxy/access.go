package proxy

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/jsonmember"
)

// Access is one line of the access log: what the proxy did with one
// request it served (see Server.Access).
type Access struct {
	// Method and Path are the request's, the path as the client sent it
	// (with its /budget/<ms> prefix, if any).
	Method, Path string
	// Messages reports a create-message call (POST /v1/messages, or a
	// routed endpoint of the OpenAI or Gemini face), for which the fields
	// below are filled in as far as they are known.
	Messages bool
	// Route is the route the call took, as its llmfleet-route header says.
	Route llmfleet.Route
	// Model is the model the call named, when the proxy read it (the
	// body of a call with a budget, or the response of an observed sync
	// call); empty otherwise.
	Model string
	// Status is the response status; 0 if no response was written (the
	// caller left first).
	Status int
	// Latency is the time from the request's arrival to the end of its
	// answer.
	Latency time.Duration
	// Budget is the call's latency budget; 0 for none.
	Budget time.Duration
	// RequestID is llmfleet's id of a batched call (llmfleet-request-id),
	// else the upstream's (Anthropic's request-id, OpenAI's x-request-id).
	RequestID string
	// Key names the client's credential as the cost ledger does (the ClientName hook, else its key label under Server.Fingerprint); empty for
	// a request without one. Never the key itself.
	Key string
}

// accessRec is what serving a request learns for its Access record. It
// rides in the request's context.
type accessRec struct {
	s            *Server
	start        time.Time
	method, path string
	routed       bool         // a routed call of its face (Access.Messages)
	key          *clientName  // the presented credential's, nil without one
	ownKey       clientName   // what key points to, allocated with the record
	ctx          accessCtx    // the request's context, carrying the record
	w            accessWriter // the ResponseWriter noting the status

	mu     sync.Mutex
	model  string
	budget time.Duration
	// parked is set when the handler took the connection over: report
	// is then called once the answer has been written there.
	parked bool
}

type accessKey struct{}

// accessCtx is a context carrying an accessRec under accessKey, as
// context.WithValue would, held in the record rather than allocated.
type accessCtx struct {
	context.Context
	a *accessRec
}

func (c *accessCtx) Value(key any) any {
	if _, ok := key.(accessKey); ok {
		return c.a
	}
	return c.Context.Value(key)
}

func accessOf(ctx context.Context) *accessRec {
	a, _ := ctx.Value(accessKey{}).(*accessRec)
	return a
}

// noteCall records a routed call's budget, and its model if its body was
// read, for the access log.
func noteCall(r *http.Request, c *call) {
	a := accessOf(r.Context())
	if a == nil {
		return
	}
	body := c.body
	if body == nil && c.req != nil {
		body = c.req.Body
	}
	model := ""
	if body != nil {
		model = modelOf(body)
	}
	a.mu.Lock()
	a.budget = c.budget
	if model != "" {
		a.model = model
	}
	a.mu.Unlock()
}

// noteModel records the model a sync call's response named.
func noteModel(ctx context.Context, model string) {
	if a := accessOf(ctx); a != nil && model != "" {
		a.mu.Lock()
		a.model = model
		a.mu.Unlock()
	}
}

// newAccessRec starts the access record of r, served by s.
func newAccessRec(s *Server, r *http.Request) *accessRec {
	f, path := s.faceAt(r.URL.Path)
	a := &accessRec{s: s, start: s.clock.Now(), method: r.Method, path: r.URL.Path, routed: f.routed(r.Method, path)}
	if c := f.traits().key.read(r); !c.IsZero() {
		a.ownKey = clientName{s: s, cred: c}
		a.key = &a.ownKey
	}
	return a
}

// serve serves r through next and reports it to Server.Access: when next
// returns, or, for a caller whose connection the handler took over to
// answer later (pipeline.park), when that answer has been written.
func (a *accessRec) serve(w http.ResponseWriter, r *http.Request, next func(http.ResponseWriter, *http.Request)) {
	a.ctx = accessCtx{r.Context(), a}
	r = r.WithContext(&a.ctx)
	a.w = accessWriter{ResponseWriter: w}
	aw := &a.w
	next(aw, r)
	a.mu.Lock()
	parked := a.parked
	a.mu.Unlock()
	if !parked {
		if aw.status != 0 && !aw.flushed {
			flushWhole(w) // the answer is on its way before the line is written
		}
		a.report(aw.status, w.Header())
	}
}

// report gives s.Access the record of a request answered with status and
// the headers h.
func (a *accessRec) report(status int, h http.Header) {
	rec := Access{
		Method:   a.method,
		Path:     a.path,
		Messages: a.routed,
		Status:   status,
		Latency:  a.s.clock.Now().Sub(a.start),
		Key:      a.key.String(),
	}
	if rec.Messages {
		rec.Route = llmfleet.Route(h.Get(HeaderRoute))
		rec.RequestID = h.Get(HeaderRequestID)
		if rec.RequestID == "" {
			rec.RequestID = upstreamRequestID(h)
		}
		a.mu.Lock()
		rec.Model, rec.Budget = a.model, a.budget
		a.mu.Unlock()
	}
	a.s.Access(rec)
}

// accessWriter records the status of a response.
type accessWriter struct {
	http.ResponseWriter
	status int
	// flushed: nothing was written since the last flush (the handler's
	// own flushWhole), so serve need not flush again.
	flushed bool
}

func (w *accessWriter) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
	}
	w.flushed = false
	w.ResponseWriter.WriteHeader(code)
}

func (w *accessWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.flushed = false
	return w.ResponseWriter.Write(b)
}

// Flush implements http.Flusher.
func (w *accessWriter) Flush() {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	http.NewResponseController(w.ResponseWriter).Flush()
	w.flushed = true
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *accessWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// modelOf returns the string model member of a create-message body, or
// "" if it has none.
func modelOf(body []byte) string {
	ms, err := jsonmember.Members(body)
	if err != nil {
		return ""
	}
	m, ok := jsonmember.Find(ms, "model")
	if !ok {
		return ""
	}
	var model string
	if json.Unmarshal(m.Value(body), &model) != nil {
		return ""
	}
	return model
}

// flushWhole flushes an answer whose length its headers declare, written
// in full, to the client before the handler returns and its bookkeeping
// runs. An answer of undeclared length is left to the server, which would
// otherwise have to send it chunked.
func flushWhole(w http.ResponseWriter) {
	if w.Header().Get("Content-Length") != "" {
		http.NewResponseController(w).Flush()
	}
}

// faceAt returns the face serving path (its /budget/<ms> prefix, if any,
// left out), and the path under the face's prefix.
func (s *Server) faceAt(path string) (mountedFace, string) {
	if rest, ok := strings.CutPrefix(path, "/budget/"); ok {
		_, path, _ = strings.Cut(rest, "/")
		path = "/" + path
	}
	for _, f := range s.faces[1:] {
		if p, _ := f.prefix(); strings.HasPrefix(path, p+"/") {
			return f, path[len(p):]
		}
	}
	return s.faces[0], path
}
