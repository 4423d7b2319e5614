package claude

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/llmfleet/llmfleet"
)

// messageBatch is the API's MessageBatch object.
type messageBatch struct {
	ID               string                 `json:"id"`
	Type             string                 `json:"type"`
	ProcessingStatus string                 `json:"processing_status"`
	RequestCounts    llmfleet.RequestCounts `json:"request_counts"`
	CreatedAt        *string                `json:"created_at"`
	EndedAt          *string                `json:"ended_at"`
	ExpiresAt        *string                `json:"expires_at"`
	ResultsURL       *string                `json:"results_url"`
}

// batchList is the answer of GET /v1/messages/batches.
type batchList struct {
	Data    []messageBatch `json:"data"`
	HasMore bool           `json:"has_more"`
	FirstID *string        `json:"first_id"`
	LastID  *string        `json:"last_id"`
}

func (m *messageBatch) batch() (*llmfleet.Batch, error) {
	if m.ID == "" {
		return nil, fmt.Errorf("claude: batch object has no id")
	}
	b := &llmfleet.Batch{
		ID:     m.ID,
		Status: llmfleet.BatchStatus(m.ProcessingStatus),
		Counts: m.RequestCounts,
	}
	var err error
	if b.CreatedAt, err = parseTime("created_at", m.CreatedAt); err != nil {
		return nil, err
	}
	if b.EndedAt, err = parseTime("ended_at", m.EndedAt); err != nil {
		return nil, err
	}
	if b.ExpiresAt, err = parseTime("expires_at", m.ExpiresAt); err != nil {
		return nil, err
	}
	if m.ResultsURL != nil {
		b.ResultsURL = *m.ResultsURL
	}
	return b, nil
}

// parseTime parses an RFC 3339 time; null or absent is the zero time.
func parseTime(field string, s *string) (time.Time, error) {
	if s == nil || *s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, *s)
	if err != nil {
		return time.Time{}, fmt.Errorf("claude: batch %s: %w", field, err)
	}
	return t, nil
}

func decodeBatch(body []byte) (*llmfleet.Batch, error) {
	var m messageBatch
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, fmt.Errorf("claude: decoding batch: %w", err)
	}
	return m.batch()
}

func batchPath(id string) string { return "/v1/messages/batches/" + url.PathEscape(id) }

// GetBatch retrieves a batch (GET /v1/messages/batches/{id}). It is
// idempotent and retried after any connection error. The answer's
// Retry-After, on a batch not ended, is the batch's PollAfter.
func (p *Provider) GetBatch(ctx context.Context, cred llmfleet.Credential, id string) (*llmfleet.Batch, error) {
	if id == "" {
		return nil, localError(http.StatusNotFound, "not_found_error", "empty batch id")
	}
	rep, err := p.do(ctx, &call{op: "retrieve", method: http.MethodGet, path: batchPath(id), cred: cred, idempotent: true})
	if err != nil {
		return nil, err
	}
	b, err := decodeBatch(rep.body)
	if err != nil {
		return nil, err
	}
	// A running batch's answer asks for a wait before the next look
	// (Retry-After: 10, in seconds or as an HTTP date).
	if d, ok := retryAfter(rep.header, llmfleet.Now(p.Clock)); ok && b.Status != llmfleet.BatchEnded {
		b.PollAfter = d
	}
	return b, nil
}

// ListBatches lists the credential's batches, newest first: one page of at
// most limit batches (the API's default, 20, when limit ≤ 0) after afterID.
func (p *Provider) ListBatches(ctx context.Context, cred llmfleet.Credential, afterID string, limit int) (*llmfleet.BatchPage, error) {
	q := url.Values{}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if afterID != "" {
		q.Set("after_id", afterID)
	}
	rep, err := p.do(ctx, &call{op: "list", method: http.MethodGet, path: "/v1/messages/batches", query: q, cred: cred, idempotent: true})
	if err != nil {
		return nil, err
	}
	var l batchList
	if err := json.Unmarshal(rep.body, &l); err != nil {
		return nil, fmt.Errorf("claude: decoding batch list: %w", err)
	}
	page := &llmfleet.BatchPage{HasMore: l.HasMore, Batches: make([]llmfleet.Batch, 0, len(l.Data))}
	if l.LastID != nil {
		page.LastID = *l.LastID
	}
	for i := range l.Data {
		b, err := l.Data[i].batch()
		if err != nil {
			return nil, err
		}
		page.Batches = append(page.Batches, *b)
	}
	if page.LastID == "" && len(page.Batches) > 0 {
		page.LastID = page.Batches[len(page.Batches)-1].ID
	}
	return page, nil
}

// CancelBatch asks the provider to cancel a batch (POST
// /v1/messages/batches/{id}/cancel). Canceling twice does no harm, so it is
// retried like an idempotent call.
func (p *Provider) CancelBatch(ctx context.Context, cred llmfleet.Credential, id string) (*llmfleet.Batch, error) {
	if id == "" {
		return nil, localError(http.StatusNotFound, "not_found_error", "empty batch id")
	}
	rep, err := p.do(ctx, &call{op: "cancel", method: http.MethodPost, path: batchPath(id) + "/cancel", cred: cred, idempotent: true})
	if err != nil {
		return nil, err
	}
	return decodeBatch(rep.body)
}
