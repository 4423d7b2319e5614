package openai

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/openaiwire"
)

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
