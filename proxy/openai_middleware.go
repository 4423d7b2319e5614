package proxy

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/openaiwire"
)

// OpenAI routes the openai-go SDK's chat completions, responses and
// embeddings calls whose context carries a latency budget
// (llmfleet.WithBudget) as the OpenAI face routes them: a call routed
// sync goes on through next; one routed flex goes on with service_tier
// "flex" and, if the API refuses the tier or its capacity, once more in
// the standard tier (the SDK's own retries apply to each); a batched one
// is answered from its batch, as the endpoint's body or, for a chat
// stream, as its chunks. A call without a budget takes
// Server.DefaultBudget (0, the default: sync, unchanged); every other
// call goes on unchanged. The llmfleet-route header of each answer says
// its route. A sync or flex call's budget does not cut it unless the call
// asks for a hard deadline (llmfleet-deadline: hard), when it is answered
// 504 timeout_error once its budget has run out; the SDK's own timeout
// bounds it otherwise.
func (sr *SDKRouter) OpenAI(req *http.Request, next Next) (*http.Response, error) {
	s := sr.s
	endpoint := ""
	for _, ep := range []string{openaiwire.ChatCompletions, openaiwire.Responses, openaiwire.Embeddings} {
		if strings.HasSuffix(req.URL.Path, strings.TrimPrefix(ep, "/v1")) {
			endpoint = ep
		}
	}
	if req.Method != http.MethodPost || endpoint == "" {
		return next(req)
	}
	p := pipeline{s, openAIFace{s: s, endpoint: endpoint, sdk: true}}
	c, e := p.plan(req, false)
	if e != nil {
		return serveInProcess(req, func(w http.ResponseWriter, _ *http.Request) {
			if !e.bare {
				w.Header().Set(HeaderRoute, string(c.route))
			}
			setReason(w.Header(), c)
			setRefusalHeaders(w.Header(), e)
			p.f.refuse(w, e)
		}), nil
	}
	body := []byte(c.req.Body)
	for k := range req.Header {
		if len(k) > 9 && strings.EqualFold(k[:9], "llmfleet-") {
			req.Header.Del(k)
		}
	}
	if c.route == llmfleet.RouteBatch {
		return serveInProcess(req, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set(HeaderRoute, string(c.route))
			setReason(w.Header(), c)
			p.batch(w, r, c)
		}), nil
	}
	call := func(req *http.Request) (*http.Response, error) {
		setBody(req, body)
		return next(req)
	}
	if c.route == llmfleet.RouteFlex {
		call = func(req *http.Request) (*http.Response, error) { return sr.flexThrough(req, c, body, next) }
	}
	resp, err := s.nextWithin(req, c.hard && c.budget > 0, c.remaining(s.clock.Now()), call,
		func(w http.ResponseWriter, _ *http.Request) {
			writeOpenAIError(w, http.StatusGatewayTimeout, "timeout_error", "", "", s.cutMessage(callCutHard, c.budget, "upstream OpenAI API"))
		})
	if resp != nil {
		resp.Header.Set(HeaderRoute, string(c.route))
		setReason(resp.Header, c)
	}
	return resp, err
}

// flexThrough sends a flex call of the middleware on through the
// engine's flex executor (flex.go): with service_tier "flex", retried or
// sent once more in the standard tier as the engine decides.
func (sr *SDKRouter) flexThrough(req *http.Request, c *openAICall, body []byte, next Next) (*http.Response, error) {
	send := func(b []byte) func(context.Context) (*http.Response, error) {
		return func(ctx context.Context) (*http.Response, error) {
			r := req.WithContext(ctx)
			setBody(r, b)
			return next(r)
		}
	}
	resp, _, err := flexCall{exec: sr.s.fwd.flex, wire: openAIFlex(), c: c, attempt: send(openAIFlex().body(body)), standard: send(body)}.run(req.Context())
	return resp, err
}

// setBody sets b as req's body, which the SDK may read again.
func setBody(req *http.Request, b []byte) {
	req.Body = io.NopCloser(bytes.NewReader(b))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	req.ContentLength = int64(len(b))
}
