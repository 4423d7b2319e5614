package gemini

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
	"github.com/llmfleet/llmfleet/geminiwire"
)

// DefaultMaxRetries is the number of retries of a batch create's calls
// when Provider.MaxRetries is zero.
const DefaultMaxRetries = 2

// createCall is one call of a batch create: the start or the upload of
// its input file, or the create itself.
type createCall struct {
	op, url string // op names the call in errors; url is absolute
	body    []byte
	header  http.Header
	// idempotent calls may be sent again after any failure (an upload
	// made twice leaves an orphan file, which costs nothing); the create
	// is sent again only when it was refused or never written.
	idempotent bool
}

// retriedCall makes c with cred, retrying it as CreateBatch describes
// while ctx lasts, and returns its 2xx answer's headers and body. The
// error of the last attempt is returned: an *llmfleet.Error for an error
// answer, one wrapping llmfleet.ErrNotDelivered for a request never
// written, an *llmfleet.UncertainError for a create that may have been
// carried out.
func (p *Provider) retriedCall(ctx context.Context, cred llmfleet.Credential, c createCall) (http.Header, []byte, error) {
	for attempt := 0; ; attempt++ {
		h, body, wait, err, retry := p.attempt(ctx, cred, c)
		if err == nil {
			return h, body, nil
		}
		if !retry || attempt >= p.maxRetries() || ctx.Err() != nil {
			return nil, nil, err
		}
		if wait <= 0 {
			d := min(500*time.Millisecond<<min(attempt, 10), 8*time.Second)
			wait = d - time.Duration(rand.Int64N(int64(d/4)+1))
		}
		if deadline, ok := ctx.Deadline(); ok && llmfleet.Now(p.Clock).Add(wait).After(deadline) {
			return nil, nil, err // the wait would outlast the call
		}
		if llmfleet.Sleep(ctx, p.Clock, wait) != nil {
			return nil, nil, err
		}
	}
}

// attempt makes one attempt of c. It returns the answer, the wait an
// error answer asked for, the attempt's error and whether it may be
// retried.
func (p *Provider) attempt(ctx context.Context, cred llmfleet.Credential, c createCall) (http.Header, []byte, time.Duration, error, bool) {
	var written atomic.Bool
	trace := &httptrace.ClientTrace{WroteRequest: func(info httptrace.WroteRequestInfo) {
		if info.Err == nil {
			written.Store(true)
		}
	}}
	hr, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), http.MethodPost, c.url, bytes.NewReader(c.body))
	if err != nil {
		return nil, nil, 0, err, false
	}
	for k, vs := range c.header {
		hr.Header[k] = vs
	}
	setCredential(hr, cred)
	res, err := p.client().Do(hr)
	if err != nil {
		err = fmt.Errorf("gemini: %s: %w", c.op, err)
		switch {
		case !written.Load():
			return nil, nil, 0, fmt.Errorf("%w: %w", llmfleet.ErrNotDelivered, err), true
		case c.idempotent:
			return nil, nil, 0, err, true
		}
		return nil, nil, 0, &llmfleet.UncertainError{Err: err}, false
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if res.StatusCode/100 == 2 {
		if err == nil && len(b) > 0 && !json.Valid(b) {
			err = fmt.Errorf("not JSON: %.80q", b)
		}
		if err == nil {
			return res.Header, b, 0, nil, false
		}
		err = fmt.Errorf("gemini: %s: reading the answer: %w", c.op, err)
		if c.idempotent {
			return nil, nil, 0, err, true
		}
		return nil, nil, 0, &llmfleet.UncertainError{Answered: true, Err: err}, false // made, its name unread
	}
	apiErr := geminiwire.ErrorOf(res.StatusCode, b, res.Header, false)
	if !c.idempotent && res.StatusCode >= 500 {
		// A 5xx after the create was sent does not prove the batch was
		// not made: reconcile, don't send it again.
		return nil, nil, 0, &llmfleet.UncertainError{Answered: true, Err: apiErr}, false
	}
	return nil, nil, apiErr.RetryAfter, apiErr, retryable(res.StatusCode)
}

// retryable reports whether an error answer may be retried: 408, 409,
// 429 and every 5xx.
func retryable(status int) bool {
	return status == http.StatusRequestTimeout || status == http.StatusConflict ||
		status == http.StatusTooManyRequests || status >= 500
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
