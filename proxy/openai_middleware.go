package proxy

import (
	"bytes"
	"io"
	"net/http"
	"strings"

	"github.com/openai/openai-go/v3/option"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/jsonmember"
	"github.com/llmfleet/llmfleet/openaiwire"
)

// OpenAIMiddleware returns an openai-go middleware that routes the SDK's
// chat completions, responses and embeddings calls whose context carries
// a latency budget (llmfleet.WithBudget) as the OpenAI face routes them,
// in process: a call routed sync goes on through the SDK's own HTTP
// client; one routed flex goes on with service_tier "flex" and, if the API
// refuses the tier or its capacity, once more in the standard tier (the
// SDK's own retries apply to each); a batched one is answered from its
// batch, as the endpoint's body or, for a chat stream, as its chunks. A
// call without a budget takes Server.DefaultBudget (0, the default: sync,
// unchanged); every other call goes on unchanged. The llmfleet-route
// header of each answer says its route.
func (s *Server) OpenAIMiddleware() option.Middleware {
	s.init()
	return s.openAIMiddleware
}

func (s *Server) openAIMiddleware(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	endpoint := ""
	for _, ep := range []string{openaiwire.ChatCompletions, openaiwire.Responses, openaiwire.Embeddings} {
		if strings.HasSuffix(req.URL.Path, strings.TrimPrefix(ep, "/v1")) {
			endpoint = ep
		}
	}
	if req.Method != http.MethodPost || endpoint == "" {
		return next(req)
	}
	c, e := s.planOpenAI(req, endpoint)
	if e != nil {
		return serveInProcess(req, func(w http.ResponseWriter, _ *http.Request) { e.write(w) }), nil
	}
	body := []byte(c.req.Body)
	setBody := func(b []byte) {
		req.Body = io.NopCloser(bytes.NewReader(b))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
		req.ContentLength = int64(len(b))
	}
	for k := range req.Header {
		if len(k) > 9 && strings.EqualFold(k[:9], "llmfleet-") {
			req.Header.Del(k)
		}
	}
	switch c.route {
	case llmfleet.RouteBatch:
		return serveInProcess(req, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set(HeaderRoute, string(c.route))
			s.serveOpenAIBatch(w, r, c)
		}), nil
	case llmfleet.RouteFlex:
		flexBody, err := jsonmember.Set(body, "service_tier", []byte(`"flex"`))
		if err != nil {
			flexBody = body
		}
		setBody(flexBody)
		start := s.clock.Now()
		resp, err := next(req)
		if err == nil && (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusBadRequest) {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
			resp.Body.Close()
			reason := openaiwire.Reason(resp.StatusCode, b)
			if fo, ok := s.Submitter.(llmfleet.FlexObserver); ok && reason != nil {
				fo.ObserveFlex(openAIProvider, c.model, s.clock.Now().Sub(start), reason)
			}
			if reason == nil {
				resp.Body = io.NopCloser(bytes.NewReader(b))
			} else {
				setBody(body) // the standard tier
				resp, err = next(req)
			}
		}
		if resp != nil {
			resp.Header.Set(HeaderRoute, string(c.route))
		}
		return resp, err
	default:
		setBody(body)
		resp, err := next(req)
		if resp != nil {
			resp.Header.Set(HeaderRoute, string(c.route))
		}
		return resp, err
	}
}
