package gemini

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/geminiwire"
	"github.com/llmfleet/llmfleet/internal/httpretry"
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
	loop := httpretry.Loop{Clock: p.Clock, MaxRetries: p.maxRetries(), Bounded: true}
	a, err := httpretry.Do(ctx, loop, func(int) (answer, httpretry.Try) {
		return p.attempt(ctx, cred, c)
	})
	return a.header, a.body, err
}

// answer is a 2xx answer's headers and body.
type answer struct {
	header http.Header
	body   []byte
}

// attempt makes one attempt of c. It returns the answer, or the error,
// whether it may be retried and the wait an error answer asked for (its
// RetryInfo, else its Retry-After in seconds).
func (p *Provider) attempt(ctx context.Context, cred llmfleet.Credential, c createCall) (answer, httpretry.Try) {
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(c.body))
	if err != nil {
		return answer{}, httpretry.Try{Err: err}
	}
	for k, vs := range c.header {
		hr.Header[k] = vs
	}
	setCredential(hr, cred)
	res, written, err := httpretry.Send(p.client(), hr)
	if err != nil {
		return answer{}, httpretry.Unanswered(fmt.Errorf("gemini: %s: %w", c.op, err), written, c.idempotent)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if res.StatusCode/100 == 2 {
		if err == nil && len(b) > 0 && !json.Valid(b) {
			err = fmt.Errorf("not JSON: %.80q", b)
		}
		if err == nil {
			return answer{res.Header, b}, httpretry.Try{}
		}
		err = fmt.Errorf("gemini: %s: reading the answer: %w", c.op, err)
		if c.idempotent {
			return answer{}, httpretry.Try{Err: err, Retry: true}
		}
		return answer{}, httpretry.Try{Err: &llmfleet.UncertainError{Answered: true, Err: err}} // made, its name unread
	}
	apiErr := geminiwire.ErrorOf(res.StatusCode, b, res.Header, false)
	if !c.idempotent && res.StatusCode >= 500 {
		// A 5xx after the create was sent does not prove the batch was
		// not made: reconcile, don't send it again.
		return answer{}, httpretry.Try{Err: &llmfleet.UncertainError{Answered: true, Err: apiErr}}
	}
	return answer{}, httpretry.Try{Err: apiErr, Retry: httpretry.RetryableStatus(res.StatusCode),
		Wait: apiErr.RetryAfter, Asked: apiErr.RetryAfter > 0}
}

func (p *Provider) maxRetries() int {
	return httpretry.MaxRetries(p.MaxRetries, DefaultMaxRetries)
}
