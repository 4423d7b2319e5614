package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/claudewire"
	"github.com/llmfleet/llmfleet/openaiwire"
)

// DefaultMaxRetries is the number of retries of a batch create's calls
// when Provider.MaxRetries is zero.
const DefaultMaxRetries = 2

// createCall is one of the two calls of a batch create: the upload of its
// input file or the create itself.
type createCall struct {
	op, path    string // op names the call in errors
	body        []byte
	contentType string
	// idempotent calls may be sent again after any failure: an upload
	// made twice leaves an orphan file, which costs nothing. The create is
	// not: it is sent again only when it was refused or never written.
	idempotent bool
}

// retriedCall makes c, POSTed with cred and the OpenAI-Organization and
// OpenAI-Project headers of header, retrying it as CreateBatch describes
// while ctx lasts, and decodes its 2xx answer into out. The error of the
// last attempt is returned: an *llmfleet.Error for an error answer, one
// wrapping llmfleet.ErrNotDelivered for a request never written, an
// *llmfleet.UncertainError for a create that may have been carried out.
func (p *Provider) retriedCall(ctx context.Context, cred llmfleet.Credential, header http.Header, c createCall, out any) error {
	for attempt := 0; ; attempt++ {
		res, err, retry := p.attempt(ctx, cred, header, c, out)
		if err == nil {
			return nil
		}
		if !retry || attempt >= p.maxRetries() || ctx.Err() != nil {
			return err
		}
		wait := p.retryDelay(res, attempt)
		if deadline, ok := ctx.Deadline(); ok && llmfleet.Now(p.Clock).Add(wait).After(deadline) {
			return err // the wait would outlast the call
		}
		if llmfleet.Sleep(ctx, p.Clock, wait) != nil {
			return err
		}
	}
}

// attempt makes one attempt of c. It returns the answer's header (nil
// without an answer), the attempt's error and whether it may be retried.
func (p *Provider) attempt(ctx context.Context, cred llmfleet.Credential, header http.Header, c createCall, out any) (http.Header, error, bool) {
	var written atomic.Bool
	trace := &httptrace.ClientTrace{WroteRequest: func(info httptrace.WroteRequestInfo) {
		if info.Err == nil {
			written.Store(true)
		}
	}}
	hr, err := p.request(httptrace.WithClientTrace(ctx, trace), cred, header, http.MethodPost, c.path, bytes.NewReader(c.body), c.contentType)
	if err != nil {
		return nil, err, false
	}
	res, err := p.client().Do(hr)
	if err != nil {
		err = fmt.Errorf("openai: %s: %w", c.op, err)
		switch {
		case !written.Load():
			return nil, fmt.Errorf("%w: %w", llmfleet.ErrNotDelivered, err), true
		case c.idempotent:
			return nil, err, true
		}
		return nil, &llmfleet.UncertainError{Err: err}, false
	}
	defer res.Body.Close()
	if res.StatusCode/100 == 2 {
		b, err := io.ReadAll(res.Body)
		if err == nil {
			err = json.Unmarshal(b, out)
		}
		if err == nil {
			return nil, nil, false
		}
		err = fmt.Errorf("openai: %s: reading the answer: %w", c.op, err)
		if c.idempotent {
			return res.Header, err, true
		}
		return res.Header, &llmfleet.UncertainError{Answered: true, Err: err}, false // made, its id unread
	}
	b, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	apiErr := openaiwire.ErrorOf(res.StatusCode, b, res.Header.Get("X-Request-Id"))
	if !c.idempotent && res.StatusCode >= 500 {
		// A 5xx after the create was sent does not prove the batch was
		// not made: reconcile, don't send it again.
		return res.Header, &llmfleet.UncertainError{Answered: true, Err: apiErr}, false
	}
	return res.Header, apiErr, retryable(res, b)
}

// retryable reports whether an error answer may be retried: x-should-retry
// decides if present, else the status does (408, 409, 429 but for an
// exhausted quota, and every 5xx).
func retryable(res *http.Response, body []byte) bool {
	switch res.Header.Get("X-Should-Retry") {
	case "true":
		return true
	case "false":
		return false
	}
	switch s := res.StatusCode; {
	case s == http.StatusTooManyRequests:
		e, _ := openaiwire.ParseError(body)
		return e.Type != "insufficient_quota" && (e.Code == nil || *e.Code != "insufficient_quota")
	case s == http.StatusRequestTimeout || s == http.StatusConflict || s >= 500:
		return true
	}
	return false
}

// retryDelay is the wait before retry number n+1 (n counts from 0): what
// the answer's retry-after-ms or retry-after asks for, else half a second
// doubling at each retry up to 8 s, less up to a quarter (so that
// callers that failed together spread out).
func (p *Provider) retryDelay(h http.Header, n int) time.Duration {
	if d, ok := claudewire.RetryAfter(h, llmfleet.Now(p.Clock)); ok {
		return d
	}
	d := min(500*time.Millisecond<<min(n, 10), 8*time.Second)
	return d - time.Duration(rand.Int64N(int64(d/4)+1))
}

// setPollAfter sets b's PollAfter to the wait the answer's Retry-After
// (retry-after-ms, seconds or an HTTP date) asks for, unless b ended.
func (p *Provider) setPollAfter(b *llmfleet.Batch, h http.Header) {
	if d, ok := claudewire.RetryAfter(h, llmfleet.Now(p.Clock)); ok && b.Status != llmfleet.BatchEnded {
		b.PollAfter = d
	}
}

func (p *Provider) maxRetries() int {
	switch {
	case p.MaxRetries == 0:
		return DefaultMaxRetries
	case p.MaxRetries < 0:
		return 0
	}
	return p.MaxRetries
}
