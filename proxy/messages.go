package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/claudewire"
)

// anthropicFace is the Anthropic Messages API's face: POST /v1/messages
// (and the SDK middleware's calls) through the routed-call pipeline, the
// Message Batches API by owner (batchowners.go), its answers, errors and
// streams in the API's shapes, the rest of /v1/ passed upstream as
// allowed (mount).
type anthropicFace struct {
	s *Server
	// client names the client in proxy-held-key mode ("" otherwise).
	client string
}

// traits: sync or batch may be forced; a non-streaming batched caller may
// be parked on its connection, a spent budget is answered at once, a
// streaming caller waits on ping events, the stream begun at the first.
func (f anthropicFace) traits() faceTraits {
	return faceTraits{routes: [3]llmfleet.Route{llmfleet.RouteSync, llmfleet.RouteBatch}, parks: true, spent: true,
		stream: streamShape{ping: anthropicPing, begin: anthropicStreamHead}, key: headerKeys(), billed: anthropicBilled}
}

// admit names the call's client, and with proxy-held keys checks its key
// and takes the upstream credential.
func (f anthropicFace) admit(r *http.Request, c *call) *refusal {
	s := f.s
	cred := credentialFrom(r.Header)
	if s.Observe != nil || s.Submitter != nil {
		c.client = s.clientNameOf(r, cred, &c.ownClient) // the key presented, not the upstream one
	}
	if s.Credentials != nil {
		up, ok := s.Credentials(cred)
		if !ok {
			return refusalOf(unauthorized)
		}
		c.cred = &up
	}
	return nil
}

// route reads the body when routing needs it (a budget, or a forced
// batch route) and asks the Submitter; a call bound for a batch has its
// body checked and stripped of "stream" (batchBody).
func (f anthropicFace) route(r *http.Request, c *call, force llmfleet.Route) *refusal {
	s := f.s
	if e := anthropicHeldRefs(f, r, c); e != nil {
		return e
	}
	if force == llmfleet.RouteSync || force == "" && (c.budget <= 0 || s.Submitter == nil) {
		return nil
	}
	if force == llmfleet.RouteBatch {
		c.route = llmfleet.RouteBatch
		if s.Submitter == nil {
			return &refusal{status: http.StatusServiceUnavailable, typ: "api_error", msg: "llmfleet has no dispatcher to batch the request"}
		}
	}
	cred := credentialFrom(r.Header)
	if c.cred != nil {
		cred = *c.cred
	}
	if cred.IsZero() {
		// The API refuses a call without a key before it looks at the
		// body; a batched one must not get as far as a pool.
		return refusalOf(missingKey)
	}
	body := c.body
	if body == nil {
		var e *apiError
		if body, e = s.bodies.read(r); e != nil {
			return refusalOf(e)
		}
		c.body = body
	}
	req := &llmfleet.Request{Provider: s.Provider, Credential: cred, Header: passHeaders(r.Header), Body: body, Client: c.client.String(),
		NoBatch: c.noBatch, BatchOnly: c.batchOnly}
	if c.cred != nil && req.Header != nil {
		dropAccountHeaders(req.Header) // the key's account, not the client's choice
	}
	if force == "" {
		if s.ToolResultsSync && lastUserHasToolResult(body) {
			return nil
		}
		// Routed by what is left of the budget once the body is read (at
		// least a nanosecond: a budget was given).
		c.route = s.Submitter.Plan(max(c.remaining(s.clock.Now()), time.Nanosecond), req)
		if c.route != llmfleet.RouteBatch {
			c.route = llmfleet.RouteSync
			return nil
		}
	}
	params, stream, e := batchBody(req.Body)
	if e != nil {
		return refusalOf(e)
	}
	req.Body = params
	c.req, c.stream, c.body = req, stream, nil // a parked request holds one copy of its body
	return nil
}

// anthropicHeldRefs reads the body of a call of f with proxy-held keys,
// whatever its route, and returns the refusal of what it names that is
// not the client's (heldRefusal): a file, a code execution container.
// What the call's answer names is then recorded as the client's
// (c.owner).
func anthropicHeldRefs(f anthropicFace, r *http.Request, c *call) *refusal {
	s := f.s
	if s.Credentials == nil {
		return nil
	}
	body, e := s.bodies.read(r)
	if e != nil {
		return refusalOf(e)
	}
	if body == nil {
		body = []byte{}
	}
	c.body = body
	client := f.client
	if client == "" { // routed at /v1/messages, not through the face's mount
		client = s.ownerName(credentialFrom(r.Header))
	}
	if e := heldRefusal(s, r, f, client, body); e != nil {
		return e
	}
	c.owner = client
	return nil
}

// anthropicAnswerIDs returns what a Message (or one of its stream's
// events) names that a later call may name: the message itself, the
// container its code ran in, the files that code wrote. Only those places
// are read: what a model or an MCP server writes (a tool's input, a tool
// listing's schema) could otherwise make any id its client's.
func anthropicAnswerIDs(data []byte) []string {
	var ev struct {
		anthropicMessage
		Message      *anthropicMessage `json:"message"` // message_start's
		Delta        *anthropicMessage `json:"delta"`   // message_delta's
		ContentBlock *anthropicBlock   `json:"content_block"`
	}
	if json.Unmarshal(data, &ev) != nil {
		return nil
	}
	var ids []string
	for _, m := range [...]*anthropicMessage{&ev.anthropicMessage, ev.Message, ev.Delta} {
		if m != nil {
			ids = m.ids(ids)
		}
	}
	if ev.ContentBlock != nil {
		ids = ev.ContentBlock.ids(ids)
	}
	return ids
}

// anthropicMessage is what anthropicAnswerIDs reads of a Message.
type anthropicMessage struct {
	Type      string `json:"type"`
	ID        string `json:"id"`
	Container *struct {
		ID string `json:"id"`
	} `json:"container"`
	Content []anthropicBlock `json:"content"`
}

// ids appends the ids the message names to ids.
func (m anthropicMessage) ids(ids []string) []string {
	if m.Type == "message" {
		ids = append(ids, m.ID)
	}
	if m.Container != nil {
		ids = append(ids, m.Container.ID)
	}
	for _, b := range m.Content {
		ids = b.ids(ids)
	}
	return ids
}

// anthropicBlock is what anthropicAnswerIDs reads of a content block: a
// code execution result's output files.
type anthropicBlock struct {
	Type    string          `json:"type"`
	Content json.RawMessage `json:"content"` // (another block's may be a string or a list)
}

// ids appends the files a code execution result's outputs are to ids.
func (b anthropicBlock) ids(ids []string) []string {
	if !strings.HasSuffix(b.Type, "code_execution_tool_result") {
		return ids
	}
	var result struct {
		Content []struct {
			FileID string `json:"file_id"`
		} `json:"content"`
	}
	json.Unmarshal(b.Content, &result) // (an error result has none)
	for _, o := range result.Content {
		ids = append(ids, o.FileID)
	}
	return ids
}

// note records the call's budget, and its model if its body was read,
// for the access log.
func (f anthropicFace) note(r *http.Request, c *call, _ *refusal) { noteCall(r, c) }

// refuse answers e in the Anthropic error envelope.
func (f anthropicFace) refuse(w http.ResponseWriter, e *refusal) {
	if e.closes {
		// The body is left unread: the connection cannot carry another
		// request.
		w.Header().Set("Connection", "close")
	}
	id := llmfleet.NewID("req_")
	writeErrorBody(w, failure{status: e.status, requestID: id, noRetry: e.noRetry, body: claudewire.Envelope(e.typ, e.msg, id)})
}

// passHeaders returns the provider headers a batched request carries into
// its batch: every anthropic-* header (anthropic-version, anthropic-beta,
// ...). Requests whose such headers differ are never pooled together.
func passHeaders(h http.Header) http.Header {
	var out http.Header
	for k, v := range h {
		if len(k) > 10 && strings.EqualFold(k[:10], "anthropic-") {
			if out == nil {
				out = make(http.Header)
			}
			out[http.CanonicalHeaderKey(k)] = v
		}
	}
	return out
}

// sync sends a routed call straight upstream through the reverse
// proxy. A call with a budget has its body read whole first (as routing
// may have done), so that it can be sent again (syncbudget.go). The
// budget does not cut the call unless it is a hard deadline (c.hard);
// the upstream timeout does (deadline.go).
func (f anthropicFace) sync(w http.ResponseWriter, r *http.Request, c *call) {
	s := f.s
	if c.budget > 0 && c.body == nil {
		body, e := s.bodies.read(r)
		if e != nil {
			f.refuse(w, refusalOf(e))
			return
		}
		if body == nil {
			body = []byte{}
		}
		c.body = body
		noteCall(r, c)
	}
	sc := s.fwd.newSyncCall(c)
	if sc != nil {
		sc.cred = credentialFrom(r.Header)
		if c.cred != nil {
			sc.cred = *c.cred
		}
	}
	if sc != nil || c.body != nil || c.cred != nil {
		ctx := r.Context()
		if c.cred != nil {
			ctx = context.WithValue(ctx, upstreamCredential{}, *c.cred)
		}
		if c.owner != "" {
			ctx = context.WithValue(ctx, answerOwner{}, c.owner)
		}
		if sc != nil {
			ctx = sc.context(ctx)
			hard, spent := c.hardLeft(s.clock.Now())
			if spent {
				s.fwd.callCut(w, r, sc, callCutHard, false)
				return
			}
			sc.bound = &sc.ownBound
			ctx = sc.traced(sc.bound.start(s.clock, ctx, hard, s.upstreamTimeout))
			defer sc.bound.release()
		}
		r = r.WithContext(ctx)
		if c.body != nil {
			r.Body = io.NopCloser(bytes.NewReader(c.body))
			r.ContentLength = int64(len(c.body))
		} else if sc != nil && r.Body != nil && r.Body != http.NoBody {
			sc.counted = countedBody{r.Body, &sc.sentBytes}
			r.Body = &sc.counted
		}
	}
	if c.body == nil {
		fullDuplex(w)
		if sc != nil && r.Body != nil {
			if _, ok := s.Submitter.(llmfleet.CacheObserver); ok && s.Observe != nil {
				// Kept as it streams upstream, for the cost model to
				// learn the prompt cache's state from the answer.
				r.Body = sc.tee(r.Body)
			}
		}
	}
	if sc == nil || s.Observe == nil {
		f.upstream().ServeHTTP(w, r)
		return
	}
	// The answer is flushed to the caller before its ledger entry is
	// priced, counted and queued for the store: none of that is the
	// caller's wait.
	sc.hold()
	defer s.fwd.obs.release(sc)
	f.upstream().ServeHTTP(w, r)
	flushWhole(w)
}

// countedBody is a request body that counts the bytes read from it.
type countedBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b countedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// fullDuplex lets a handler that has not read its request body yet keep
// reading it after the response has begun. net/http otherwise closes the
// body at the first response write, which now and then cuts a streamed
// response that the reverse proxy is still copying while the upstream
// request is being sent (golang/go#40747).
func fullDuplex(w http.ResponseWriter) {
	_ = http.NewResponseController(w).EnableFullDuplex()
}
