package claude

import (
	"context"
	"io"
	"net/http"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/claudewire"
)

// Send makes a non-streaming POST /v1/messages call with req's body, byte for
// byte. A 2xx answer is returned as a sync-route Response carrying the
// provider's status, headers, body, usage and model; an error answer as an
// *llmfleet.Error. Send retries only what the provider refused with a
// retryable status and connections that failed before the request was
// written, so a call is never run twice.
func (p *Provider) Send(ctx context.Context, req *llmfleet.Request) (*llmfleet.Response, error) {
	if err := checkBody(req); err != nil {
		return nil, err
	}
	rep, err := p.do(ctx, &call{
		op: "send", method: http.MethodPost, path: "/v1/messages",
		cred: req.Credential, header: req.Header, body: req.Body,
	})
	if err != nil {
		return nil, err
	}
	resp := &llmfleet.Response{
		Route:      llmfleet.RouteSync,
		StatusCode: rep.status,
		Header:     rep.header,
		Body:       rep.body,
	}
	if info, err := claudewire.ParseMessageInfo(rep.body); err == nil {
		resp.Usage = info.Usage
		resp.Model = info.Model
	} else {
		p.logger().WarnContext(ctx, "anthropic: answer is not a Message", "error", err.Error(),
			"request_id", rep.header.Get("Request-Id"))
	}
	return resp, nil
}

// Stream makes a streaming POST /v1/messages call; req's body, passed byte
// for byte, should ask for "stream": true. Once the provider answers 2xx it
// returns the server-sent-event stream, which the caller must close; an
// error answer is returned as an *llmfleet.Error. An error may still arrive
// inside the stream as an "error" event (see ReadMessage). Retries are as
// for Send.
func (p *Provider) Stream(ctx context.Context, req *llmfleet.Request) (io.ReadCloser, error) {
	if err := checkBody(req); err != nil {
		return nil, err
	}
	rep, err := p.do(ctx, &call{
		op: "stream", method: http.MethodPost, path: "/v1/messages",
		cred: req.Credential, header: req.Header, body: req.Body,
		accept: "text/event-stream", stream: true,
	})
	if err != nil {
		return nil, err
	}
	return rep.stream, nil
}

func checkBody(req *llmfleet.Request) error {
	if len(req.Body) == 0 {
		return localError(http.StatusBadRequest, "invalid_request_error", "request body is empty")
	}
	return nil
}
