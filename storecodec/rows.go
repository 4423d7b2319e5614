package storecodec

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/llmfleet/llmfleet"
)

// RequestColumns are the columns ScanRequest reads, in order.
const RequestColumns = `id, provider, credential_id, header, body, model, budget,
	accepted_at, deadline, state, batch_id, custom_id,
	status_code, result_body, result_error, usage, completed_at, client, endpoint, result_batch_id`

// RowScanner is a *sql.Row or *sql.Rows.
type RowScanner interface{ Scan(dest ...any) error }

// ScanRequest reads one row of RequestColumns.
func ScanRequest(s RowScanner) (*llmfleet.StoredRequest, error) {
	var (
		r                             llmfleet.StoredRequest
		header, usage                 []byte
		resultBody, resultErr         []byte
		budget                        int64
		accepted, deadline, completed sql.NullInt64
		batchID, customID, resBatch   sql.NullString
		status                        sql.NullInt64
		state                         string
	)
	err := s.Scan(&r.ID, &r.Provider, &r.CredentialID, &header, &r.Body, &r.Model, &budget,
		&accepted, &deadline, &state, &batchID, &customID,
		&status, &resultBody, &resultErr, &usage, &completed, &r.Client, &r.Endpoint, &resBatch)
	if err != nil {
		return nil, err
	}
	if r.Header, err = DecodeHeader(header); err != nil {
		return nil, fmt.Errorf("request %s header: %w", r.ID, err)
	}
	if r.Body == nil {
		r.Body = []byte{}
	}
	r.Budget = time.Duration(budget)
	r.AcceptedAt, r.Deadline = TimeOf(accepted), TimeOf(deadline)
	r.State = llmfleet.RequestState(state)
	r.BatchID, r.CustomID = batchID.String, customID.String
	if r.State == llmfleet.RequestDone {
		res, err := ResultOf(status, resultBody, resultErr)
		if err != nil {
			return nil, fmt.Errorf("request %s: %w", r.ID, err)
		}
		res.CompletedAt, res.BatchID = TimeOf(completed), resBatch.String
		if res.Usage, err = DecodeUsage(usage); err != nil {
			return nil, fmt.Errorf("request %s usage: %w", r.ID, err)
		}
		r.Result = res
	}
	return &r, nil
}

// Querier is a *sql.Tx or *sql.DB.
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// QueryRequests reads the requests a query of RequestColumns selects.
func QueryRequests(ctx context.Context, q Querier, query string, args ...any) ([]*llmfleet.StoredRequest, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*llmfleet.StoredRequest
	for rows.Next() {
		r, err := ScanRequest(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// QueryBatches reads the batches a query of BatchColumns selects, as
// pending batches without their requests.
func QueryBatches(ctx context.Context, q Querier, query string, args ...any) ([]*llmfleet.PendingBatch, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*llmfleet.PendingBatch
	for rows.Next() {
		b, err := ScanBatch(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, &llmfleet.PendingBatch{Batch: *b})
	}
	return out, rows.Err()
}

// BatchColumns are the columns ScanBatch reads, in order.
const BatchColumns = `id, provider, credential_id, upstream_id, state, size,
	intent_at, created_at, ended_at, create_deadline`

// ScanBatch reads one row of BatchColumns.
func ScanBatch(s RowScanner) (*llmfleet.StoredBatch, error) {
	var (
		b                                llmfleet.StoredBatch
		upstream                         sql.NullString
		state                            string
		intent, created, ended, deadline sql.NullInt64
	)
	if err := s.Scan(&b.ID, &b.Provider, &b.CredentialID, &upstream, &state, &b.Size,
		&intent, &created, &ended, &deadline); err != nil {
		return nil, err
	}
	b.UpstreamID, b.State = upstream.String, llmfleet.BatchState(state)
	b.IntentAt, b.CreatedAt, b.EndedAt = TimeOf(intent), TimeOf(created), TimeOf(ended)
	b.CreateDeadline = TimeOf(deadline)
	return &b, nil
}
