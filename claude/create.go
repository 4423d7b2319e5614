package claude

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/llmfleet/llmfleet"
)

// CreateBatch creates one batch (POST /v1/messages/batches) holding items.
// Each item's Params is embedded in the body byte for byte. Only anthropic-*
// headers of header are sent.
//
// A create is not idempotent. It is retried only when the provider refused it
// with a retryable status or the connection failed before the request was
// written. When it fails after it was written, CreateBatch reconciles with
// the provider's batch list as the package documentation describes: it
// returns the batch it finds, retries the create once if the list proves the
// batch was not created, or returns an error wrapping ErrAmbiguousCreate.
func (p *Provider) CreateBatch(ctx context.Context, cred llmfleet.Credential, header http.Header, items []llmfleet.BatchItem) (*llmfleet.Batch, error) {
	body, err := encodeCreate(items)
	if err != nil {
		return nil, err
	}
	c := &call{op: "create", method: http.MethodPost, path: "/v1/messages/batches", cred: cred, header: header, body: body}
	cc := p.startCreate(len(items))
	var adopted string
	defer func() { p.finishCreate(cc, adopted) }()

	for retried := false; ; retried = true {
		sentAt := p.setSentAt(cc)
		rep, err := p.do(ctx, c)
		if err == nil {
			b, err := decodeBatch(rep.body)
			if err != nil {
				// The batch exists, but its id is unreadable: it must not
				// be mistaken for another create's.
				p.markAmbiguous(cc)
				return nil, fmt.Errorf("%w: %w", ErrAmbiguousCreate, err)
			}
			adopted = b.ID
			return b, nil
		}
		if !isAmbiguous(err) {
			p.settle(cc)
			return nil, err
		}
		log := p.logger().With("credential", cred.String(), "requests", len(items))
		if ctx.Err() != nil {
			p.markAmbiguous(cc)
			log.WarnContext(ctx, "anthropic: batch create failed after it was sent; context done, not reconciled", "error", err.Error())
			return nil, fmt.Errorf("%w (not reconciled: %w): %w", ErrAmbiguousCreate, ctx.Err(), err)
		}
		log.WarnContext(ctx, "anthropic: batch create failed after it was sent; reconciling", "error", err.Error())
		b, rerr := p.reconcile(ctx, cc, cred, sentAt, len(items))
		switch {
		case rerr != nil:
			log.ErrorContext(ctx, "anthropic: batch create is ambiguous", "error", rerr.Error())
			return nil, fmt.Errorf("%w (reconciliation: %w): %w", ErrAmbiguousCreate, rerr, err)
		case b != nil:
			log.WarnContext(ctx, "anthropic: adopted the batch the failed create made", "batch", b.ID)
			adopted = b.ID
			return b, nil
		case retried:
			return nil, fmt.Errorf("claude: batch create failed twice; the provider lists no such batch: %w", err)
		}
		log.WarnContext(ctx, "anthropic: the provider lists no such batch; creating it again")
	}
}

// encodeCreate builds {"requests":[{"custom_id":...,"params":...},...]},
// embedding each Params unchanged.
func encodeCreate(items []llmfleet.BatchItem) ([]byte, error) {
	if len(items) == 0 {
		return nil, localError(http.StatusBadRequest, "invalid_request_error", "requests: a batch needs at least one request")
	}
	if len(items) > MaxBatchRequests {
		return nil, localError(http.StatusBadRequest, "invalid_request_error",
			fmt.Sprintf("requests: %d requests, more than the %d a batch may hold", len(items), MaxBatchRequests))
	}
	size := len(`{"requests":[]}`)
	for _, it := range items {
		size += len(`{"custom_id":"","params":},`) + len(it.CustomID) + len(it.Params)
	}
	if size-1 > MaxBatchBytes {
		return nil, tooLarge(size - 1)
	}
	var b bytes.Buffer
	b.Grow(size)
	b.WriteString(`{"requests":[`)
	for i, it := range items {
		params := bytes.TrimSpace(it.Params)
		if len(params) == 0 {
			return nil, localError(http.StatusBadRequest, "invalid_request_error",
				fmt.Sprintf("requests.%d.params: empty", i))
		}
		if i > 0 {
			b.WriteByte(',')
		}
		id, err := json.Marshal(it.CustomID)
		if err != nil {
			return nil, err
		}
		b.WriteString(`{"custom_id":`)
		b.Write(id)
		b.WriteString(`,"params":`)
		b.Write(it.Params)
		b.WriteByte('}')
	}
	b.WriteString(`]}`)
	if b.Len() > MaxBatchBytes {
		return nil, tooLarge(b.Len())
	}
	return b.Bytes(), nil
}

func tooLarge(n int) error {
	return localError(http.StatusRequestEntityTooLarge, "request_too_large",
		fmt.Sprintf("batch create body is %d bytes, more than the %d a batch may hold", n, MaxBatchBytes))
}
