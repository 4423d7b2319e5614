package openai

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/openaiwire"
)

// TagKey is the metadata key a batch carries llmfleet's tag under.
const TagKey = "llmfleet_tag"

// batchObject is the API's Batch.
type batchObject openaiwire.Batch

func at(v *int64) time.Time {
	if v == nil {
		return time.Time{}
	}
	return time.Unix(*v, 0).UTC()
}

// batch maps the API's Batch onto llmfleet's.
func (o *batchObject) batch() *llmfleet.Batch {
	b := &llmfleet.Batch{ID: o.ID, CreatedAt: time.Unix(o.CreatedAt, 0).UTC(), ExpiresAt: at(o.ExpiresAt)}
	c := o.RequestCounts
	switch o.Status {
	case "completed", "failed", "expired", "cancelled":
		b.Status = llmfleet.BatchEnded
		b.EndedAt = at(o.CompletedAt)
		for _, t := range []*int64{o.FailedAt, o.ExpiredAt, o.CancelledAt} {
			if b.EndedAt.IsZero() {
				b.EndedAt = at(t)
			}
		}
		b.Counts = llmfleet.RequestCounts{Succeeded: c.Completed, Errored: c.Failed}
		if o.Status == "failed" {
			b.Failure = o.failure()
			b.Counts = llmfleet.RequestCounts{Errored: c.Total}
		}
	case "cancelling":
		b.Status = llmfleet.BatchCanceling
		b.Counts.Processing = max(c.Total-c.Completed-c.Failed, 0)
	default: // validating, in_progress, finalizing
		b.Status = llmfleet.BatchInProgress
		b.Counts.Processing = c.Total
	}
	if o.OutputFileID != nil || o.ErrorFileID != nil {
		b.ResultsURL = o.ID
	}
	return b
}

// failure returns the error of a batch that failed as a whole, as the
// synchronous API would have answered it: 429 for a token limit, 400 for
// a file the API refused.
func (o *batchObject) failure() *llmfleet.Error {
	code, msg := "batch_failed", "The batch failed."
	var param string
	if o.Errors != nil && len(o.Errors.Data) > 0 {
		e := o.Errors.Data[0]
		code, msg = e.Code, e.Message
		if e.Param != nil {
			param = *e.Param
		}
	}
	status, typ := http.StatusBadRequest, "invalid_request_error"
	if code == "token_limit_exceeded" {
		status, typ = http.StatusTooManyRequests, "rate_limit_exceeded"
	}
	return &llmfleet.Error{StatusCode: status, Type: code, Message: msg, Body: openaiwire.Envelope(typ, code, param, msg)}
}

// FindBatch looks for the batch created with q.Tag in the credential's
// list, newest first, by its metadata; nil once the list reached batches
// created before q.Since (less a minute of clock skew) without it.
func (p *Provider) FindBatch(ctx context.Context, cred llmfleet.Credential, q llmfleet.BatchQuery) (*llmfleet.Batch, error) {
	since := q.Since.Add(-time.Minute)
	after := ""
	for range 20 {
		objs, more, err := p.list(ctx, cred, after, 100)
		if err != nil {
			return nil, err
		}
		for i := range objs {
			if objs[i].Metadata[TagKey] == q.Tag {
				return objs[i].batch(), nil
			}
			if time.Unix(objs[i].CreatedAt, 0).Before(since) {
				return nil, nil
			}
		}
		if !more || len(objs) == 0 {
			return nil, nil
		}
		after = objs[len(objs)-1].ID
	}
	return nil, llmfleet.ErrUndetermined
}

// list reads one page of the credential's batches: limit of them, at
// most 100; 0 or less means the API's default, 20.
func (p *Provider) list(ctx context.Context, cred llmfleet.Credential, after string, limit int) ([]batchObject, bool, error) {
	if limit <= 0 {
		limit = 20
	}
	q := url.Values{"limit": {strconv.Itoa(min(limit, 100))}}
	if after != "" {
		q.Set("after", after)
	}
	var page struct {
		Data    []batchObject `json:"data"`
		HasMore bool          `json:"has_more"`
	}
	if err := p.call(ctx, cred, nil, http.MethodGet, "/v1/batches?"+q.Encode(), nil, "", &page); err != nil {
		return nil, false, err
	}
	return page.Data, page.HasMore, nil
}

// GetBatch retrieves one batch. The counts of a batch that ended
// cancelled or expired are read off its error file (see counted). A
// Retry-After on the answer for a batch not ended is its PollAfter.
func (p *Provider) GetBatch(ctx context.Context, cred llmfleet.Credential, id string) (*llmfleet.Batch, error) {
	var o batchObject
	h, err := p.callHeader(ctx, cred, nil, http.MethodGet, "/v1/batches/"+url.PathEscape(id), nil, "", &o)
	if err != nil {
		return nil, err
	}
	b, err := p.counted(ctx, cred, &o)
	if err != nil {
		return nil, err
	}
	p.setPollAfter(b, h)
	return b, nil
}

// counted returns o as llmfleet's batch. The request counts of the API
// have no place for the requests a cancel or the expiry stopped
// (batch_cancelled and batch_expired lines of the error file): of a batch
// that ended cancelled or expired with requests not completed, the error
// file is read to tell them from the failed ones, so that the counts are
// those of its results.
func (p *Provider) counted(ctx context.Context, cred llmfleet.Credential, o *batchObject) (*llmfleet.Batch, error) {
	b := o.batch()
	c := o.RequestCounts
	if (o.Status != "cancelled" && o.Status != "expired") || c.Completed >= c.Total {
		return b, nil
	}
	var n llmfleet.RequestCounts
	n.Succeeded = c.Completed
	if o.ErrorFileID != nil && *o.ErrorFileID != "" {
		var content []byte
		if err := p.call(ctx, cred, nil, http.MethodGet, "/v1/files/"+url.PathEscape(*o.ErrorFileID)+"/content", nil, "", &content); err != nil {
			return nil, fmt.Errorf("openai: batch %s error file: %w", o.ID, err)
		}
		err := ReadResults(bytes.NewReader(content), func(r llmfleet.BatchResult) error {
			switch r.Type {
			case llmfleet.ResultCanceled:
				n.Canceled++
			case llmfleet.ResultExpired:
				n.Expired++
			default:
				n.Errored++
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("openai: batch %s error file: %w", o.ID, err)
		}
	}
	// Requests in neither file were stopped too.
	if rest := c.Total - n.Total(); rest > 0 {
		if o.Status == "expired" {
			n.Expired += rest
		} else {
			n.Canceled += rest
		}
	}
	b.Counts = n
	return b, nil
}

// ListBatches lists the credential's batches, newest first.
func (p *Provider) ListBatches(ctx context.Context, cred llmfleet.Credential, afterID string, limit int) (*llmfleet.BatchPage, error) {
	objs, more, err := p.list(ctx, cred, afterID, limit)
	if err != nil {
		return nil, err
	}
	page := &llmfleet.BatchPage{HasMore: more}
	for i := range objs {
		page.Batches = append(page.Batches, *objs[i].batch())
	}
	if len(objs) > 0 {
		page.LastID = objs[len(objs)-1].ID
	}
	return page, nil
}

// CancelBatch asks the API to cancel a batch.
func (p *Provider) CancelBatch(ctx context.Context, cred llmfleet.Credential, id string) (*llmfleet.Batch, error) {
	var o batchObject
	if err := p.call(ctx, cred, nil, http.MethodPost, "/v1/batches/"+url.PathEscape(id)+"/cancel", nil, "", &o); err != nil {
		return nil, err
	}
	return p.counted(ctx, cred, &o)
}
