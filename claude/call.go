package claude

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/internal/httpretry"
)

// call describes one API call, which may take several attempts.
type call struct {
	op     string // for logs: "send", "create", "retrieve", ...
	method string
	path   string
	query  url.Values
	cred   llmfleet.Credential
	header http.Header // the caller's headers; only anthropic-* are sent
	body   []byte      // nil for no body
	accept string      // Accept header; empty means application/json

	// idempotent calls are retried after any connection error. Other calls
	// are retried after a connection error only if the request was never
	// written.
	idempotent bool
	// stream returns a 2xx response with its body unread.
	stream bool
}

// reply is the 2xx answer to a call.
type reply struct {
	status int
	header http.Header
	body   []byte        // read body, unless the call streams
	stream io.ReadCloser // unread body of a streaming call
}

// connError is a call's failure without a usable answer: the connection
// failed, or the answer's body could not be read.
type connError struct {
	op      string
	written bool // the request was written, so the provider may have acted on it
	err     error
}

func (e *connError) Error() string {
	if e.written {
		return fmt.Sprintf("claude: %s: request sent, no answer: %v", e.op, e.err)
	}
	return fmt.Sprintf("claude: %s: %v", e.op, e.err)
}

func (e *connError) Unwrap() error { return e.err }

// maxErrorBody bounds how much of an error answer is read.
const maxErrorBody = 1 << 20

// do makes the call, retrying as the package documentation describes. A
// non-2xx answer that is not retried is returned as an *llmfleet.Error; a
// connection failure as a *connError, or ctx's error once ctx is done.
func (p *Provider) do(ctx context.Context, c *call) (*reply, error) {
	if c.cred.IsZero() {
		return nil, localError(http.StatusUnauthorized, "authentication_error",
			"no credential: set an API key (x-api-key) or an auth token (Authorization: Bearer)")
	}
	loop := httpretry.Loop{Clock: p.Clock, MaxRetries: p.maxRetries(),
		Retrying: func(n int, err error, delay time.Duration) {
			p.logger().WarnContext(ctx, "anthropic: retrying", "op", c.op, "retry", n,
				"error", err.Error(), "delay", delay, "credential", p.credLabel(c.cred))
		}}
	rep, err := httpretry.Do(ctx, loop, func(int) (*reply, httpretry.Try) {
		rep, res, err, retry := p.attempt(ctx, c)
		return rep, httpretry.Answered(err, retry, res, llmfleet.Now(p.Clock))
	})
	if err != nil {
		return nil, classify(c, err)
	}
	return rep, nil
}

// attempt makes one attempt of c. It returns the reply, or the error with the
// response header (nil if there was no response) and whether the error may
// be retried.
func (p *Provider) attempt(ctx context.Context, c *call) (rep *reply, res http.Header, err error, retry bool) {
	var body io.Reader
	if c.body != nil {
		body = bytes.NewReader(c.body)
	}
	u := p.url(c.path)
	if len(c.query) > 0 {
		u += "?" + c.query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, c.method, u, body)
	if err != nil {
		return nil, nil, fmt.Errorf("claude: %s: %w", c.op, err), false
	}
	p.setHeaders(req.Header, c.cred, c.header, c.body != nil)
	if c.accept != "" {
		req.Header.Set("Accept", c.accept)
	}
	resp, written, err := httpretry.Send(p.httpClient(), req)
	if err != nil {
		return nil, nil, &connError{op: c.op, written: written, err: err}, c.idempotent || !written
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		if c.stream {
			return &reply{status: resp.StatusCode, header: resp.Header, stream: resp.Body}, nil, nil, false
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			// The provider answered, so it acted on the request: only an
			// idempotent call may be sent again.
			err = fmt.Errorf("claude: %s: reading answer: %w", c.op, err)
			if !c.idempotent {
				return nil, resp.Header, &llmfleet.UncertainError{Answered: true, Err: err}, false
			}
			return nil, resp.Header, &connError{op: c.op, written: true, err: err}, true
		}
		return &reply{status: resp.StatusCode, header: resp.Header, body: b}, nil, nil, false
	}
	b, readErr := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	resp.Body.Close()
	apiErr := parseError(resp.StatusCode, resp.Header, b, llmfleet.Now(p.Clock))
	if c.op == "create" && maybeProcessed(resp) {
		// A 5xx after the body was sent does not prove the batch was not
		// created: reconcile, don't resend.
		return nil, resp.Header, &llmfleet.UncertainError{Answered: true, Err: apiErr}, false
	}
	retry = shouldRetry(resp)
	if readErr != nil && !retry {
		if v, ok := httpretry.ShouldRetry(resp.Header); !ok || v {
			retry = c.idempotent
		}
	}
	return nil, resp.Header, apiErr, retry
}

// maybeProcessed reports whether an error answer leaves open whether a
// non-idempotent request was carried out: any 5xx but 529, whatever
// x-should-retry says (529 overloaded_error is a refusal before any work).
func maybeProcessed(resp *http.Response) bool {
	return resp.StatusCode >= 500 && resp.StatusCode != 529
}

// shouldRetry reports whether an error answer may be retried: the
// x-should-retry header decides if present, else the status does.
func shouldRetry(resp *http.Response) bool {
	if v, ok := httpretry.ShouldRetry(resp.Header); ok {
		return v
	}
	return httpretry.RetryableStatus(resp.StatusCode)
}

// retryAfter returns the delay the provider asked for in h: retry-after-ms,
// else retry-after in seconds or as an HTTP date.
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	return httpretry.RetryAfter(h, now)
}

// classify returns a call's final connection failure in the vocabulary
// of the root package: not delivered (the request was never written), or
// uncertain (written, no answer) for a call that is not idempotent.
func classify(c *call, err error) error {
	var ce *connError
	if !errors.As(err, &ce) {
		return err
	}
	if !ce.written {
		return fmt.Errorf("%w: %w", llmfleet.ErrNotDelivered, err)
	}
	if !c.idempotent {
		return &llmfleet.UncertainError{Err: err}
	}
	return err
}
