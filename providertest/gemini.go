package providertest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/llmfleet/llmfleet/geminiwire"
)

// Dialect is implemented by a Wire whose API differs, in facts the suite
// checks, from what Anthropic's and OpenAI's share: the error type of a
// 400 for a body the API refuses (invalid_request_error for both), and
// how long after its create a batch expires (24 hours for both).
type Dialect interface {
	// InvalidType is the error type of a 400 refusing a body.
	InvalidType() string
	// BatchExpiry is how long after its create a batch expires.
	BatchExpiry() time.Duration
}

func (s *suite) invalidType() string {
	if d, ok := s.wire().(Dialect); ok {
		return d.InvalidType()
	}
	return "invalid_request_error"
}

func (s *suite) batchExpiry() time.Duration {
	if d, ok := s.wire().(Dialect); ok {
		return d.BatchExpiry()
	}
	return 24 * time.Hour
}

// Gemini is the dialect of the Gemini API's generateContent. A body
// names its model in a "model" member (the adapter sends it in the
// path); extra members are translated: "temperature" goes into
// generationConfig, "stream" is dropped (streaming is a method of its own)
// and so is "metadata", which the API has no place for. Error types are
// Google's canonical statuses; the API answers a refused key with a 400,
// so Env.BadCredential should stay zero.
var Gemini Wire = geminiWire{}

type geminiWire struct{}

func (geminiWire) DefaultModel() string { return "gemini-2.5-flash" }

func (geminiWire) Body(model, prompt string, extra ...string) []byte {
	p, _ := json.Marshal(prompt)
	b := fmt.Sprintf(`{"model":%q,"contents":[{"role":"user","parts":[{"text":%s}]}]`, model, p)
	var config []string
	for _, e := range extra {
		switch {
		case strings.HasPrefix(e, `"temperature":`):
			config = append(config, e)
		case strings.HasPrefix(e, `"stream":`), strings.HasPrefix(e, `"metadata":`):
		default:
			b += "," + e
		}
	}
	if len(config) > 0 {
		b += `,"generationConfig":{` + strings.Join(config, ",") + "}"
	}
	return []byte(b + "}")
}

func (geminiWire) Invalid(model string, stream bool) []byte {
	return []byte(`{"model":"` + model + `","contents":[]}`)
}

func (geminiWire) Answer(raw []byte) (Answer, error) {
	var r geminiwire.GenerateContentResponse
	if err := json.Unmarshal(raw, &r); err != nil {
		return Answer{}, fmt.Errorf("not a GenerateContentResponse: %v", err)
	}
	if r.ResponseID == "" || len(r.Candidates) == 0 || r.Candidates[0].Content == nil ||
		r.Candidates[0].Content.Role != "model" || r.Candidates[0].FinishReason == "" || r.UsageMetadata == nil {
		return Answer{}, errors.New("a GenerateContentResponse without its responseId, candidate, role, finishReason or usageMetadata")
	}
	return Answer{ID: r.ResponseID, Model: r.ModelVersion, Text: r.Text(), Usage: r.UsageMetadata.Usage()}, nil
}

// StreamText reads streamGenerateContent?alt=sse: data-only events, each a
// chunk of one response, the last with a finish reason.
func (geminiWire) StreamText(r io.Reader) (string, error) {
	id := ""
	s, err := geminiwire.ReadStream(r, func(c geminiwire.GenerateContentResponse) error {
		if c.ResponseID == "" || (id != "" && c.ResponseID != id) {
			return fmt.Errorf("a chunk of another response: %q after %q", c.ResponseID, id)
		}
		id = c.ResponseID
		return nil
	})
	if err != nil {
		return "", err
	}
	if s.Chunks == 0 || s.FinishReason == "" {
		return "", fmt.Errorf("stream of %d chunks without a finish reason", s.Chunks)
	}
	return s.Text, nil
}

func (geminiWire) Status(typ string) int { return geminiwire.HTTPStatus(typ) }

func (geminiWire) BadCredential() string { return geminiwire.StatusInvalidArgument }

func (geminiWire) ErrorTypes() []string {
	return []string{geminiwire.StatusUnavailable, geminiwire.StatusResourceExhausted, geminiwire.StatusPermissionDenied,
		geminiwire.StatusNotFound, geminiwire.StatusInternal}
}

func (geminiWire) NotFound() string { return geminiwire.StatusNotFound }

func (geminiWire) Refusals() []int { return []int{400, 429} }

func (geminiWire) PoolHeaders() (http.Header, map[string]http.Header) {
	project := func(p string) http.Header { return http.Header{"X-Goog-User-Project": {p}} }
	return project("proj-a"), map[string]http.Header{
		"no project":      nil,
		"another project": project("proj-b"),
	}
}

func (geminiWire) InvalidType() string { return geminiwire.StatusInvalidArgument }

func (geminiWire) BatchExpiry() time.Duration { return geminiwire.Expiry }
