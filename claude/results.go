package claude

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/claudewire"
	"github.com/llmfleet/llmfleet/internal/httpretry"
)

// resultLine is one line of the results JSONL.
type resultLine struct {
	CustomID string `json:"custom_id"`
	Result   struct {
		Type    string          `json:"type"`
		Message json.RawMessage `json:"message"`
		Error   json.RawMessage `json:"error"`
	} `json:"result"`
}

// errStopped marks an error returned by the caller's fn.
type errStopped struct{ err error }

func (e errStopped) Error() string { return e.err.Error() }

// Results streams the results of an ended batch (GET
// /v1/messages/batches/{id}/results) to fn, one JSONL line at a time, in the
// order the provider sends them. An errored result carries an *llmfleet.Error
// whose StatusCode is the one the synchronous API uses for its type. If the
// stream breaks part-way, Results fetches it again, within MaxRetries, and
// skips the custom_ids it already delivered. An error from fn stops the
// stream and is returned as is.
func (p *Provider) Results(ctx context.Context, cred llmfleet.Credential, id string, fn func(llmfleet.BatchResult) error) error {
	if id == "" {
		return localError(http.StatusNotFound, "not_found_error", "empty batch id")
	}
	seen := make(map[string]bool)
	for attempt := 0; ; attempt++ {
		rep, err := p.do(ctx, &call{
			op: "results", method: http.MethodGet, path: batchPath(id) + "/results",
			cred: cred, accept: "application/x-jsonl", idempotent: true, stream: true,
		})
		if err != nil {
			return err
		}
		err = readResults(rep.stream, seen, fn)
		rep.stream.Close()
		var stop errStopped
		switch {
		case err == nil:
			return nil
		case errors.As(err, &stop):
			return stop.err
		case ctx.Err() != nil:
			return ctx.Err()
		case attempt >= p.maxRetries():
			return err
		}
		p.logger().WarnContext(ctx, "anthropic: results stream broke; fetching again", "batch", id,
			"delivered", len(seen), "error", err.Error(), "credential", p.credLabel(cred))
		if err := llmfleet.Sleep(ctx, p.Clock, httpretry.Backoff(attempt)); err != nil {
			return err
		}
	}
}

// readResults decodes JSONL from r, calling fn for each result whose
// custom_id is not in seen, and adds it to seen.
func readResults(r io.Reader, seen map[string]bool, fn func(llmfleet.BatchResult) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			if err != nil && err != io.EOF {
				// A partial last line is dropped; it is fetched again.
				return fmt.Errorf("claude: reading results: %w", err)
			}
			res, derr := decodeResult(line)
			if derr != nil {
				if err == io.EOF {
					// A cut-off last line looks like invalid JSON.
					return fmt.Errorf("claude: results stream ended inside a line: %w", derr)
				}
				return derr
			}
			if !seen[res.CustomID] {
				seen[res.CustomID] = true
				if ferr := fn(res); ferr != nil {
					return errStopped{ferr}
				}
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("claude: reading results: %w", err)
		}
	}
}

// decodeResult decodes one results line.
func decodeResult(line []byte) (llmfleet.BatchResult, error) {
	var l resultLine
	if err := json.Unmarshal(line, &l); err != nil {
		return llmfleet.BatchResult{}, fmt.Errorf("claude: decoding result line: %w", err)
	}
	if l.CustomID == "" {
		return llmfleet.BatchResult{}, fmt.Errorf("claude: result line has no custom_id")
	}
	res := llmfleet.BatchResult{CustomID: l.CustomID, Type: llmfleet.ResultType(l.Result.Type)}
	switch res.Type {
	case llmfleet.ResultSucceeded:
		res.Message = l.Result.Message
		if info, err := claudewire.ParseMessageInfo(res.Message); err == nil {
			res.Usage, res.Model = info.Usage, info.Model
		}
	case llmfleet.ResultErrored:
		res.Error = resultError(l.Result.Error)
	}
	return res, nil
}

// resultError turns the error envelope of an errored result into an
// *llmfleet.Error. The type sits at result.error.error.type.
func resultError(raw json.RawMessage) *llmfleet.Error {
	var env envelope
	_ = json.Unmarshal(raw, &env)
	t := env.Error.Type
	if t == "" {
		t = "api_error"
	}
	return &llmfleet.Error{
		StatusCode: claudewire.StatusForType(t),
		Type:       t,
		Message:    env.Error.Message,
		RequestID:  env.RequestID,
		Body:       raw,
	}
}
