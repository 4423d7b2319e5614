package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/internal/httpretry"
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
	loop := httpretry.Loop{Clock: p.Clock, MaxRetries: p.maxRetries(), Bounded: true}
	_, err := httpretry.Do(ctx, loop, func(int) (struct{}, httpretry.Try) {
		return struct{}{}, p.attempt(ctx, cred, header, c, out)
	})
	return err
}

// attempt makes one attempt of c: its error, whether it may be retried
// and the wait the answer asked for.
func (p *Provider) attempt(ctx context.Context, cred llmfleet.Credential, header http.Header, c createCall, out any) httpretry.Try {
	hr, err := p.request(ctx, cred, header, http.MethodPost, c.path, bytes.NewReader(c.body), c.contentType)
	if err != nil {
		return httpretry.Try{Err: err}
	}
	res, written, err := httpretry.Send(p.client(), hr)
	if err != nil {
		return httpretry.Unanswered(fmt.Errorf("openai: %s: %w", c.op, err), written, c.idempotent)
	}
	defer res.Body.Close()
	now := llmfleet.Now(p.Clock)
	if res.StatusCode/100 == 2 {
		b, err := io.ReadAll(res.Body)
		if err == nil {
			err = json.Unmarshal(b, out)
		}
		if err == nil {
			return httpretry.Try{}
		}
		err = fmt.Errorf("openai: %s: reading the answer: %w", c.op, err)
		if c.idempotent {
			return httpretry.Answered(err, true, res.Header, now)
		}
		return httpretry.Try{Err: &llmfleet.UncertainError{Answered: true, Err: err}} // made, its id unread
	}
	b, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	apiErr := openaiwire.ErrorOf(res.StatusCode, b, res.Header.Get("X-Request-Id"))
	if !c.idempotent && res.StatusCode >= 500 {
		// A 5xx after the create was sent does not prove the batch was
		// not made: reconcile, don't send it again.
		return httpretry.Try{Err: &llmfleet.UncertainError{Answered: true, Err: apiErr}}
	}
	return httpretry.Answered(apiErr, retryable(res, b), res.Header, now)
}

// retryable reports whether an error answer may be retried: x-should-retry
// decides if present, else the status does (408, 409, 429 but for an
// exhausted quota, and every 5xx).
func retryable(res *http.Response, body []byte) bool {
	if v, ok := httpretry.ShouldRetry(res.Header); ok {
		return v
	}
	if res.StatusCode == http.StatusTooManyRequests {
		e, _ := openaiwire.ParseError(body)
		return e.Type != "insufficient_quota" && (e.Code == nil || *e.Code != "insufficient_quota")
	}
	return httpretry.RetryableStatus(res.StatusCode)
}

// setPollAfter sets b's PollAfter to the wait the answer's Retry-After
// (retry-after-ms, seconds or an HTTP date) asks for, unless b ended.
func (p *Provider) setPollAfter(b *llmfleet.Batch, h http.Header) {
	if d, ok := httpretry.RetryAfter(h, llmfleet.Now(p.Clock)); ok && b.Status != llmfleet.BatchEnded {
		b.PollAfter = d
	}
}

func (p *Provider) maxRetries() int {
	return httpretry.MaxRetries(p.MaxRetries, DefaultMaxRetries)
}
