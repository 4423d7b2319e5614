package gemini

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/geminiwire"
	"github.com/llmfleet/llmfleet/internal/httpretry"
)

// idOf returns a batch's id: its name without "batches/".
func idOf(name string) string { return strings.TrimPrefix(name, "batches/") }

func timeOf(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}

// batchOf maps a batch operation onto llmfleet's batch. The counts of an
// ended batch are those of its batchStats (see counted for a cancelled or
// expired one); a batch that failed as a whole carries its error as
// Failure, all its requests errored.
func batchOf(op *geminiwire.Operation) *llmfleet.Batch {
	m := op.Metadata
	if m == nil {
		m = &geminiwire.Batch{}
	}
	b := &llmfleet.Batch{ID: idOf(op.Name), CreatedAt: timeOf(m.CreateTime)}
	if !b.CreatedAt.IsZero() {
		b.ExpiresAt = b.CreatedAt.Add(geminiwire.Expiry)
	}
	var st geminiwire.BatchStats
	if m.BatchStats != nil {
		st = *m.BatchStats
	}
	if !geminiwire.Ended(m.State) && !op.Done {
		b.Status = llmfleet.BatchInProgress
		b.Counts.Processing = int(st.RequestCount)
		return b
	}
	b.Status, b.EndedAt = llmfleet.BatchEnded, timeOf(m.EndTime)
	if b.EndedAt.IsZero() {
		b.EndedAt = timeOf(m.UpdateTime)
	}
	b.Counts = llmfleet.RequestCounts{Succeeded: int(st.SuccessfulRequestCount), Errored: int(st.FailedRequestCount)}
	if rest := int(st.RequestCount) - b.Counts.Total(); rest > 0 {
		b.Counts.Errored += rest
	}
	if m.State == geminiwire.BatchFailed || (op.Error != nil && output(op) == nil) {
		e := op.Error
		if e == nil {
			e = geminiwire.RPCStatus(geminiwire.StatusInternal, "The batch failed.")
		}
		b.Failure = e.Err()
		b.Counts = llmfleet.RequestCounts{Errored: int(st.RequestCount)}
	}
	if output(op) != nil {
		b.ResultsURL = op.Name
	}
	return b
}

// output returns an ended batch's output: the operation's response, else
// the metadata's.
func output(op *geminiwire.Operation) *geminiwire.BatchOutput {
	if op.Response != nil {
		return op.Response
	}
	if op.Metadata != nil {
		return op.Metadata.Output
	}
	return nil
}

// call makes one call of the API, path under the base URL, and returns
// its 2xx answer's body and header; an error answer is an
// *llmfleet.Error.
func (p *Provider) call(ctx context.Context, cred llmfleet.Credential, method, path string) ([]byte, http.Header, error) {
	hr, err := http.NewRequestWithContext(ctx, method, p.base()+path, nil)
	if err != nil {
		return nil, nil, err
	}
	setCredential(hr, cred)
	res, err := p.client().Do(hr)
	if err != nil {
		return nil, nil, fmt.Errorf("gemini: %s %s: %w", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, nil, fmt.Errorf("gemini: %s %s: %w", method, path, err)
	}
	if res.StatusCode/100 != 2 {
		return nil, nil, geminiwire.ErrorOf(res.StatusCode, b, res.Header, false)
	}
	return b, res.Header, nil
}

// operation reads one batch, and the header of the answer.
func (p *Provider) operation(ctx context.Context, cred llmfleet.Credential, id string) (*geminiwire.Operation, http.Header, error) {
	b, h, err := p.call(ctx, cred, http.MethodGet, "/"+geminiwire.Version+"/batches/"+url.PathEscape(id))
	if err != nil {
		return nil, nil, err
	}
	var op geminiwire.Operation
	if err := json.Unmarshal(b, &op); err != nil {
		return nil, nil, fmt.Errorf("gemini: batch %s: %w", id, err)
	}
	return &op, h, nil
}

// GetBatch retrieves one batch. The counts of a batch that ended
// cancelled or expired are those of its results, which tell the requests
// that did not run from those that failed. A Retry-After on the answer
// for a batch not ended is its PollAfter.
func (p *Provider) GetBatch(ctx context.Context, cred llmfleet.Credential, id string) (*llmfleet.Batch, error) {
	op, h, err := p.operation(ctx, cred, id)
	if err != nil {
		return nil, err
	}
	b, err := p.counted(ctx, cred, op)
	if err != nil {
		return nil, err
	}
	if d, ok := httpretry.RetryAfter(h, llmfleet.Now(p.Clock)); ok && b.Status != llmfleet.BatchEnded {
		b.PollAfter = d
	}
	return b, nil
}

func (p *Provider) counted(ctx context.Context, cred llmfleet.Credential, op *geminiwire.Operation) (*llmfleet.Batch, error) {
	b := batchOf(op)
	if st := op.Metadata.State; (st != geminiwire.BatchCancelled && st != geminiwire.BatchExpired) || b.Failure != nil {
		return b, nil
	}
	var n llmfleet.RequestCounts
	err := p.results(ctx, cred, op, func(r llmfleet.BatchResult) error {
		switch r.Type {
		case llmfleet.ResultSucceeded:
			n.Succeeded++
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
		return nil, err
	}
	if rest := b.Counts.Total() - n.Total(); rest > 0 { // no answer: stopped too
		if op.Metadata.State == geminiwire.BatchExpired {
			n.Expired += rest
		} else {
			n.Canceled += rest
		}
	}
	b.Counts = n
	return b, nil
}

// list reads one page of the credential's batches.
func (p *Provider) list(ctx context.Context, cred llmfleet.Credential, token string, size int) (*geminiwire.ListBatchesResponse, error) {
	q := url.Values{"pageSize": {strconv.Itoa(size)}}
	if token != "" {
		q.Set("pageToken", token)
	}
	b, _, err := p.call(ctx, cred, http.MethodGet, "/"+geminiwire.Version+"/batches?"+q.Encode())
	if err != nil {
		return nil, err
	}
	var page geminiwire.ListBatchesResponse
	if err := json.Unmarshal(b, &page); err != nil {
		return nil, fmt.Errorf("gemini: listing batches: %w", err)
	}
	return &page, nil
}

// CancelBatch asks the API to cancel a batch and returns it as it is
// then.
func (p *Provider) CancelBatch(ctx context.Context, cred llmfleet.Credential, id string) (*llmfleet.Batch, error) {
	if _, _, err := p.call(ctx, cred, http.MethodPost, "/"+geminiwire.Version+"/batches/"+url.PathEscape(id)+":cancel"); err != nil {
		return nil, err
	}
	return p.GetBatch(ctx, cred, id)
}
