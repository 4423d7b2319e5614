package gemini

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/geminiwire"
)

// Results reads an ended batch's answers, inline or from its responses
// file, and gives fn one result per request, mapped back by our key: a
// response succeeded; an error errored with the status the synchronous
// API would have answered, but for CANCELLED (canceled) and, in an
// expired batch, DEADLINE_EXCEEDED (expired). A batch that has not ended
// has no results yet: an error, fn not called.
func (p *Provider) Results(ctx context.Context, cred llmfleet.Credential, id string, fn func(llmfleet.BatchResult) error) error {
	op, _, err := p.operation(ctx, cred, id)
	if err != nil {
		return err
	}
	if batchOf(op).Status != llmfleet.BatchEnded {
		return fmt.Errorf("gemini: batch %s has not ended (%s): no results yet", id, op.Metadata.State)
	}
	return p.results(ctx, cred, op, fn)
}

func (p *Provider) results(ctx context.Context, cred llmfleet.Credential, op *geminiwire.Operation, fn func(llmfleet.BatchResult) error) error {
	out := output(op)
	if out == nil {
		return nil
	}
	expired := op.Metadata != nil && op.Metadata.State == geminiwire.BatchExpired
	if out.InlinedResponses != nil {
		return geminiwire.ReadInlined(out.InlinedResponses.InlinedResponses, expired, fn)
	}
	if out.ResponsesFile == "" {
		return nil
	}
	path := "/download/" + geminiwire.Version + "/files/" + url.PathEscape(strings.TrimPrefix(out.ResponsesFile, "files/")) + ":download?alt=media"
	b, _, err := p.call(ctx, cred, http.MethodGet, path)
	if err != nil {
		return fmt.Errorf("gemini: batch %s responses file: %w", op.Name, err)
	}
	if err := geminiwire.ReadResultLines(bytes.NewReader(b), expired, fn); err != nil {
		return fmt.Errorf("gemini: batch %s responses file: %w", op.Name, err)
	}
	return nil
}

// ListBatches lists the credential's batches, newest first, limit of them
// (at most 1000; 0 or less: 50) after the batch afterID. The API pages by
// token, not by id: a page after an id is found by reading the pages
// before it.
func (p *Provider) ListBatches(ctx context.Context, cred llmfleet.Credential, afterID string, limit int) (*llmfleet.BatchPage, error) {
	if limit <= 0 {
		limit = 50
	}
	limit = min(limit, 1000)
	size, token := limit, ""
	if afterID != "" {
		size = 1000
	}
	page := &llmfleet.BatchPage{}
	found := afterID == ""
	for range 100 {
		got, err := p.list(ctx, cred, token, size)
		if err != nil {
			return nil, err
		}
		for i := range got.Operations {
			op := &got.Operations[i]
			switch {
			case !found:
				found = idOf(op.Name) == afterID
			case len(page.Batches) == limit:
				page.HasMore = true
				return page, nil
			default:
				page.Batches = append(page.Batches, *batchOf(op))
				page.LastID = idOf(op.Name)
			}
		}
		if got.NextPageToken == "" {
			return page, nil
		}
		if found && len(page.Batches) == limit {
			page.HasMore = true
			return page, nil
		}
		token = got.NextPageToken
	}
	page.HasMore = true
	return page, nil
}

// FindBatch looks for the batch created with q.Tag in the credential's
// list, newest first, by its displayName; nil once the list reached
// batches created before q.Since (less a minute of clock skew) without
// it. A running batch shows its displayName, so the answer is never
// undetermined but for a list too long to read (100 pages).
func (p *Provider) FindBatch(ctx context.Context, cred llmfleet.Credential, q llmfleet.BatchQuery) (*llmfleet.Batch, error) {
	since := q.Since.Add(-time.Minute)
	token := ""
	for range 100 {
		page, err := p.list(ctx, cred, token, 100)
		if err != nil {
			return nil, err
		}
		for i := range page.Operations {
			op := &page.Operations[i]
			if op.Metadata == nil || (q.Known != nil && q.Known(idOf(op.Name))) {
				continue
			}
			if op.Metadata.DisplayName == q.Tag {
				return p.counted(ctx, cred, op)
			}
			if timeOf(op.Metadata.CreateTime).Before(since) {
				return nil, nil
			}
		}
		if page.NextPageToken == "" {
			return nil, nil
		}
		token = page.NextPageToken
	}
	return nil, llmfleet.ErrUndetermined
}
