package claude

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/llmfleet/llmfleet"
)

// CreateBatch creates one batch (POST /v1/messages/batches) holding items.
// Each item's Params is embedded in the body byte for byte. Only anthropic-*
// headers of header are sent. The Message Batches API lets a batch carry no
// metadata, so the tag goes where the API keeps it: every custom_id must
// begin with tag followed by "-" (the dispatcher names them so), and
// FindBatch reads it back from a batch's results.
//
// A create is not idempotent, and CreateBatch never reconciles one: it is
// retried only after an answer that refuses it (429, 529, 408, 409) or a
// connection that failed before the request was written. A failure after
// the request was written comes back as an *llmfleet.UncertainError
// (Answered for a 5xx other than 529, whatever x-should-retry says: the
// batch may exist), to be reconciled by the caller with FindBatch.
func (p *Provider) CreateBatch(ctx context.Context, cred llmfleet.Credential, tag string, header http.Header, items []llmfleet.BatchItem) (*llmfleet.Batch, error) {
	if !validTag(tag) {
		return nil, localError(http.StatusBadRequest, "invalid_request_error",
			fmt.Sprintf("batch tag %q: want 1 to 40 characters of [A-Za-z0-9_]", tag))
	}
	for _, it := range items {
		if !strings.HasPrefix(it.CustomID, tag+"-") {
			return nil, localError(http.StatusBadRequest, "invalid_request_error",
				fmt.Sprintf("custom_id %q does not carry the batch tag %q", it.CustomID, tag))
		}
	}
	body, err := encodeCreate(items)
	if err != nil {
		return nil, err
	}
	c := &call{op: "create", method: http.MethodPost, path: "/v1/messages/batches", cred: cred, header: header, body: body}
	rep, err := p.do(ctx, c)
	if err != nil {
		return nil, err
	}
	b, err := decodeBatch(rep.body)
	if err != nil {
		// The batch exists, but its id is unreadable.
		return nil, &llmfleet.UncertainError{Answered: true, Err: err}
	}
	return b, nil
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

// validTag reports whether tag is 1 to 40 characters of [A-Za-z0-9_]: no
// "-", so that a tag never begins the custom_ids of another tag.
func validTag(tag string) bool {
	if len(tag) == 0 || len(tag) > 40 {
		return false
	}
	for _, c := range []byte(tag) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}
