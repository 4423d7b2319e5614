package gemini

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/geminiwire"
	"github.com/llmfleet/llmfleet/jsonmember"
)

// CreateBatch creates one batch of items for their model, its displayName
// the tag: inline (each request with {"key": custom_id} as its metadata)
// when the create body fits 20 MB, else as a JSONL file of {"key",
// "request"} lines uploaded first through the Files API. Each call is
// retried, up to MaxRetries times within ctx, after the wait its answer's
// RetryInfo asks for, else a backoff. The upload is retried after any
// failure but a refusal (a 4xx other than 408, 409 and 429); the create,
// not idempotent, only after a refusal or a connection that failed before
// the request was written. A create written and not answered, or answered
// 5xx, is an *llmfleet.UncertainError (Answered for the 5xx) for FindBatch
// to settle, never sent again here.
func (p *Provider) CreateBatch(ctx context.Context, cred llmfleet.Credential, tag string, header http.Header, items []llmfleet.BatchItem) (*llmfleet.Batch, error) {
	if len(items) == 0 {
		return nil, errors.New("gemini: a batch of no requests")
	}
	if err := checkCustomIDs(items); err != nil {
		return nil, err
	}
	model, err := modelOf(items[0].Params, items[0].Endpoint)
	if err != nil {
		return nil, err
	}
	reqs := make([]geminiwire.InlinedRequest, len(items))
	for i, it := range items {
		m, err := modelOf(it.Params, it.Endpoint)
		if err == nil && m != model {
			err = invalid("A batch holds one model: " + m + " and " + model + ".")
		}
		if err != nil {
			return nil, err
		}
		params, err := jsonmember.Set(it.Params, "model", []byte(strconv.Quote(geminiwire.ModelPath(model))))
		if err != nil {
			return nil, invalid("Invalid JSON payload received: a request is not a JSON object.")
		}
		reqs[i] = geminiwire.InlinedRequest{Request: params, Metadata: geminiwire.KeyMetadata(it.CustomID)}
	}
	in := &geminiwire.InputConfig{Requests: &struct {
		Requests []geminiwire.InlinedRequest `json:"requests"`
	}{reqs}}
	body, err := json.Marshal(geminiwire.CreateBatchRequest{Batch: geminiwire.Batch{DisplayName: tag, InputConfig: in}})
	if err != nil {
		return nil, fmt.Errorf("gemini: %w", err)
	}
	limit := p.InlineBytes
	if limit <= 0 || limit > geminiwire.MaxInlineBytes {
		limit = geminiwire.MaxInlineBytes
	}
	if len(body) > limit {
		name, err := p.uploadInput(ctx, cred, header, tag, reqs)
		if err != nil {
			return nil, err
		}
		body, _ = json.Marshal(geminiwire.CreateBatchRequest{Batch: geminiwire.Batch{DisplayName: tag,
			InputConfig: &geminiwire.InputConfig{FileName: name}}})
	}
	create := createCall{op: "creating the batch", url: p.base() + "/" + geminiwire.Version + "/models/" + model + ":" + geminiwire.MethodBatch,
		body: body, header: jsonHeader(header)}
	_, b, err := p.retriedCall(ctx, cred, create)
	if err != nil {
		return nil, err
	}
	var op geminiwire.Operation
	if json.Unmarshal(b, &op) != nil || op.Name == "" || op.Metadata == nil {
		return nil, &llmfleet.UncertainError{Answered: true, Err: errors.New("gemini: creating the batch: the answer names no batch")}
	}
	return batchOf(&op), nil
}

// jsonHeader returns the headers of a JSON call of the batch API: the
// project of header, if any.
func jsonHeader(header http.Header) http.Header {
	h := http.Header{"Content-Type": {"application/json"}}
	if v := header.Get("X-Goog-User-Project"); v != "" {
		h.Set("X-Goog-User-Project", v)
	}
	return h
}

// uploadInput uploads the requests as a JSONL input file through the
// resumable upload of the Files API and returns the file's name.
func (p *Provider) uploadInput(ctx context.Context, cred llmfleet.Credential, header http.Header, tag string, reqs []geminiwire.InlinedRequest) (string, error) {
	var file bytes.Buffer
	for _, r := range reqs {
		line, err := json.Marshal(geminiwire.FileLine{Key: geminiwire.KeyOf(r.Metadata), Request: r.Request})
		if err != nil {
			return "", fmt.Errorf("gemini: %w", err)
		}
		file.Write(line)
		file.WriteByte('\n')
	}
	h := jsonHeader(header)
	h.Set("X-Goog-Upload-Protocol", "resumable")
	h.Set("X-Goog-Upload-Command", "start")
	h.Set("X-Goog-Upload-Header-Content-Length", strconv.Itoa(file.Len()))
	h.Set("X-Goog-Upload-Header-Content-Type", "application/jsonl")
	meta, _ := json.Marshal(map[string]any{"file": map[string]string{"displayName": tag + ".jsonl", "mimeType": "application/jsonl"}})
	start := createCall{op: "starting the input upload", url: p.base() + "/upload/" + geminiwire.Version + "/files",
		body: meta, header: h, idempotent: true}
	got, _, err := p.retriedCall(ctx, cred, start)
	if err != nil {
		return "", err
	}
	url := got.Get("X-Goog-Upload-Url")
	if url == "" {
		return "", errors.New("gemini: starting the input upload: the answer gives no upload URL")
	}
	h = http.Header{"X-Goog-Upload-Command": {"upload, finalize"}, "X-Goog-Upload-Offset": {"0"}}
	up := createCall{op: "uploading the batch input", url: url, body: file.Bytes(), header: h, idempotent: true}
	_, b, err := p.retriedCall(ctx, cred, up)
	if err != nil {
		return "", err
	}
	var f struct {
		File struct {
			Name string `json:"name"`
		} `json:"file"`
	}
	if json.Unmarshal(b, &f) != nil || f.File.Name == "" {
		return "", errors.New("gemini: uploading the batch input: the answer names no file")
	}
	return f.File.Name, nil
}

// checkCustomIDs refuses, before anything is sent, items whose custom_ids
// are not unique or not 1 to 64 characters of [a-zA-Z0-9_-], the ids
// llmfleet's engine makes: they are the keys results come back by.
func checkCustomIDs(items []llmfleet.BatchItem) error {
	seen := make(map[string]bool, len(items))
	for i, it := range items {
		switch {
		case !validCustomID(it.CustomID):
			return invalid(fmt.Sprintf("Request %d: key %q must be 1 to 64 characters of [a-zA-Z0-9_-].", i+1, it.CustomID))
		case seen[it.CustomID]:
			return invalid(fmt.Sprintf("Request %d: the key %q is not unique in the batch.", i+1, it.CustomID))
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
