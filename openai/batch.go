package openai

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/openaiwire"
)

// TagKey is the metadata key a batch carries llmfleet's tag under.
const TagKey = "llmfleet_tag"

// inputExpiry is how long an uploaded input file is kept (the API's
// minimum is an hour; a batch reads its file while it validates).
const inputExpiry = 7 * 24 * time.Hour

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

// request returns a request of the batch API with cred and the
// OpenAI-Organization and OpenAI-Project headers of header.
func (p *Provider) request(ctx context.Context, cred llmfleet.Credential, header http.Header, method, path string, body io.Reader, contentType string) (*http.Request, error) {
	hr, err := http.NewRequestWithContext(ctx, method, p.base()+path, body)
	if err != nil {
		return nil, err
	}
	for _, k := range []string{"OpenAI-Organization", "OpenAI-Project"} {
		if v := header.Get(k); v != "" {
			hr.Header.Set(k, v)
		}
	}
	if contentType != "" {
		hr.Header.Set("Content-Type", contentType)
	}
	key := cred.APIKey
	if key == "" {
		key = cred.AuthToken
	}
	hr.Header.Set("Authorization", "Bearer "+key)
	return hr, nil
}

// call makes one JSON call of the batch API and decodes its answer into
// out; an error answer is an *llmfleet.Error.
func (p *Provider) call(ctx context.Context, cred llmfleet.Credential, header http.Header, method, path string, body io.Reader, contentType string, out any) error {
	hr, err := p.request(ctx, cred, header, method, path, body, contentType)
	if err != nil {
		return err
	}
	res, err := p.client().Do(hr)
	if err != nil {
		return fmt.Errorf("openai: %s %s: %w", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return fmt.Errorf("openai: %s %s: %w", method, path, err)
	}
	if res.StatusCode/100 != 2 {
		return openaiwire.ErrorOf(res.StatusCode, b, res.Header.Get("X-Request-Id"))
	}
	if out == nil {
		return nil
	}
	if w, ok := out.(*[]byte); ok {
		*w = b
		return nil
	}
	return json.Unmarshal(b, out)
}

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
// cancelled or expired are read off its error file (see counted).
func (p *Provider) GetBatch(ctx context.Context, cred llmfleet.Credential, id string) (*llmfleet.Batch, error) {
	var o batchObject
	if err := p.call(ctx, cred, nil, http.MethodGet, "/v1/batches/"+url.PathEscape(id), nil, "", &o); err != nil {
		return nil, err
	}
	return p.counted(ctx, cred, &o)
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

// Results reads an ended batch's output and error files and gives fn one
// result per line, in the files' order: a 200 line succeeded (its body
// the endpoint's answer), another status errored (its error the envelope
// the API answered), batch_expired and batch_cancelled lines expired and
// canceled, any other error errored with status 500. A batch that has not
// ended has no results yet: an error, fn not called.
func (p *Provider) Results(ctx context.Context, cred llmfleet.Credential, id string, fn func(llmfleet.BatchResult) error) error {
	var o batchObject
	if err := p.call(ctx, cred, nil, http.MethodGet, "/v1/batches/"+url.PathEscape(id), nil, "", &o); err != nil {
		return err
	}
	if o.batch().Status != llmfleet.BatchEnded {
		return fmt.Errorf("openai: batch %s has not ended (%s): no results yet", id, o.Status)
	}
	for _, f := range []*string{o.OutputFileID, o.ErrorFileID} {
		if f == nil || *f == "" {
			continue
		}
		var content []byte
		if err := p.call(ctx, cred, nil, http.MethodGet, "/v1/files/"+url.PathEscape(*f)+"/content", nil, "", &content); err != nil {
			return fmt.Errorf("openai: batch %s results: %w", id, err)
		}
		if err := ReadResults(bytes.NewReader(content), fn); err != nil {
			return fmt.Errorf("openai: batch %s results: %w", id, err)
		}
	}
	return nil
}

// ReadResults parses batch output or error file lines into results.
func ReadResults(r io.Reader, fn func(llmfleet.BatchResult) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		var l struct {
			CustomID string `json:"custom_id"`
			Response *struct {
				StatusCode int             `json:"status_code"`
				RequestID  string          `json:"request_id"`
				Body       json.RawMessage `json:"body"`
			} `json:"response"`
			Error *struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(text, &l); err != nil || l.CustomID == "" {
			return fmt.Errorf("malformed result line %.80q", text)
		}
		res := llmfleet.BatchResult{CustomID: l.CustomID}
		switch {
		case l.Response != nil && l.Response.StatusCode == http.StatusOK:
			res.Type, res.Message = llmfleet.ResultSucceeded, l.Response.Body
			if a, err := openaiwire.ReadAnswer(l.Response.Body); err == nil {
				res.Usage, res.Model = a.Usage, a.Model
			}
		case l.Response != nil:
			res.Type = llmfleet.ResultErrored
			res.Error = openaiwire.ErrorOf(l.Response.StatusCode, l.Response.Body, l.Response.RequestID)
		case l.Error != nil && l.Error.Code == "batch_expired":
			res.Type = llmfleet.ResultExpired
		case l.Error != nil && l.Error.Code == "batch_cancelled":
			res.Type = llmfleet.ResultCanceled
		default:
			code, msg := "server_error", "The request failed inside its batch."
			if l.Error != nil {
				code, msg = l.Error.Code, l.Error.Message
			}
			res.Type = llmfleet.ResultErrored
			res.Error = &llmfleet.Error{StatusCode: http.StatusInternalServerError, Type: code, Message: msg,
				Body: openaiwire.Envelope("server_error", code, "", msg)}
		}
		if err := fn(res); err != nil {
			return err
		}
	}
	return sc.Err()
}
