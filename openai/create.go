package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime/multipart"
	"net/http"
	"strconv"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/openaiwire"
)

// inputExpiry is how long an uploaded input file is kept (the API's
// minimum is an hour; a batch reads its file while it validates).
const inputExpiry = 7 * 24 * time.Hour

// CreateBatch uploads items as a JSONL input file and creates a batch of
// it, tagged with tag in its metadata. Each of the two calls is retried,
// up to MaxRetries times within ctx, after the wait its answer asks for
// (retry-after-ms, retry-after), else a backoff; a wait that would
// outlast ctx is not begun. The upload is retried after any failure but a
// refusal (a 4xx other than 408, 409 and a 429 that is not for an
// exhausted quota, or x-should-retry: false): uploaded twice, it only
// leaves an orphan file. The create is not idempotent: it is retried only
// after such a refusal or a connection that failed before the request was
// written. A failed upload creates nothing; a create refused (4xx)
// creates nothing; one written and not answered, or answered 5xx, is an
// *llmfleet.UncertainError (Answered for the 5xx) for FindBatch to
// settle, never sent again here.
func (p *Provider) CreateBatch(ctx context.Context, cred llmfleet.Credential, tag string, header http.Header, items []llmfleet.BatchItem) (*llmfleet.Batch, error) {
	if len(items) == 0 {
		return nil, errors.New("openai: a batch of no requests")
	}
	if err := checkCustomIDs(items); err != nil {
		return nil, err
	}
	ep := items[0].Endpoint
	if ep == "" {
		ep = openaiwire.ChatCompletions
	}
	var file bytes.Buffer
	for _, it := range items {
		line, err := json.Marshal(struct {
			CustomID string          `json:"custom_id"`
			Method   string          `json:"method"`
			URL      string          `json:"url"`
			Body     json.RawMessage `json:"body"`
		}{it.CustomID, http.MethodPost, ep, it.Params})
		if err != nil {
			return nil, fmt.Errorf("openai: item %s: %w", it.CustomID, err)
		}
		file.Write(line)
		file.WriteByte('\n')
	}
	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	mw.WriteField("purpose", "batch")
	mw.WriteField("expires_after[anchor]", "created_at")
	mw.WriteField("expires_after[seconds]", strconv.Itoa(int(inputExpiry/time.Second)))
	fw, _ := mw.CreateFormFile("file", tag+".jsonl")
	fw.Write(file.Bytes())
	mw.Close()
	var uploaded struct {
		ID string `json:"id"`
	}
	upload := createCall{op: "uploading the batch input", path: "/v1/files", body: form.Bytes(), contentType: mw.FormDataContentType(), idempotent: true}
	if err := p.retriedCall(ctx, cred, header, upload, &uploaded); err != nil {
		return nil, err
	}
	if uploaded.ID == "" {
		return nil, errors.New("openai: uploading the batch input: the answer names no file")
	}
	body, _ := json.Marshal(map[string]any{"input_file_id": uploaded.ID, "endpoint": ep,
		"completion_window": "24h", "metadata": map[string]string{TagKey: tag}})
	var o batchObject
	create := createCall{op: "creating the batch", path: "/v1/batches", body: body, contentType: "application/json"}
	if err := p.retriedCall(ctx, cred, header, create, &o); err != nil {
		return nil, err
	}
	if o.ID == "" {
		return nil, &llmfleet.UncertainError{Answered: true, Err: errors.New("openai: creating the batch: the answer names no batch")}
	}
	return o.batch(), nil
}

// checkCustomIDs refuses, before anything is uploaded, items whose
// custom_ids are not unique (the API would fail the batch after its
// create) or not 1 to 64 characters of [a-zA-Z0-9_-], the ids llmfleet's
// engine makes, for every provider.
func checkCustomIDs(items []llmfleet.BatchItem) error {
	seen := make(map[string]bool, len(items))
	for i, it := range items {
		msg := ""
		switch {
		case !validCustomID(it.CustomID):
			msg = fmt.Sprintf("Line %d: custom_id %q must be 1 to 64 characters of [a-zA-Z0-9_-].", i+1, it.CustomID)
		case seen[it.CustomID]:
			msg = fmt.Sprintf("Line %d: the custom_id %q is not unique in the batch.", i+1, it.CustomID)
		}
		if msg != "" {
			return &llmfleet.Error{StatusCode: http.StatusBadRequest, Type: "invalid_request_error", Message: msg,
				Body: openaiwire.Envelope("invalid_request_error", "invalid_custom_id", "custom_id", msg)}
		}
		seen[it.CustomID] = true
	}
	return nil
}

func validCustomID(id string) bool {
	if len(id) == 0 || len(id) > 64 {
		return false
	}
	for _, c := range []byte(id) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
