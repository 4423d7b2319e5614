package providertest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/claudewire"
	"github.com/llmfleet/llmfleet/openaiwire"
	"github.com/llmfleet/llmfleet/sse"
)

// Wire is the dialect of a provider's request and answer bodies, as the
// suite writes and reads them: Anthropic's Messages (the default) or
// OpenAI's chat completions.
type Wire interface {
	// DefaultModel is the model named in bodies when Harness.Model is
	// empty.
	DefaultModel() string
	// Body returns a request body asking model to answer prompt, the last
	// user text; extra holds further top-level members, e.g.
	// `"stream":true`.
	Body(model, prompt string, extra ...string) []byte
	// Invalid returns a body that the API refuses with 400
	// invalid_request_error: at once for a synchronous call (a streaming
	// one when stream is set), as an errored result inside a batch.
	Invalid(model string, stream bool) []byte
	// Answer reads an answer body, checking the fields every answer has.
	Answer(raw []byte) (Answer, error)
	// StreamText reads a streamed answer, checking the order of its
	// events, and returns its text.
	StreamText(r io.Reader) (string, error)
	// Status returns the HTTP status that comes with an error type.
	Status(errorType string) int
	// BadCredential is the error type of a call with a key the upstream
	// rejects (401).
	BadCredential() string
	// ErrorTypes lists the error types Harness.ErrorPrompt is asked for
	// on the synchronous API; the first is the overload the suite also
	// asks of streams and batches.
	ErrorTypes() []string
	// NotFound is the error type of a 404 for a batch id unknown.
	NotFound() string
	// Refusals lists the statuses of a batch create that refuse it: the
	// batch was not created (the 5xx others leave that open).
	Refusals() []int
	// PoolHeaders returns the headers of a request and sets of headers
	// that must each give another pool key, for requests alike otherwise.
	PoolHeaders() (base http.Header, others map[string]http.Header)
}

// Answer is what the suite reads of an answer body.
type Answer struct {
	ID, Model, Text string
	Usage           llmfleet.Usage
}

// Anthropic is the dialect of the Messages API.
var Anthropic Wire = anthropicWire{}

// OpenAIChat is the dialect of OpenAI's chat completions.
var OpenAIChat Wire = openAIChatWire{}

type anthropicWire struct{}

func (anthropicWire) DefaultModel() string { return "claude-sonnet-4-6" }

func (anthropicWire) Body(model, prompt string, extra ...string) []byte {
	p, _ := json.Marshal(prompt)
	return withExtra(fmt.Sprintf(`{"model":%q,"max_tokens":1024,"messages":[{"role":"user","content":%s}]`, model, p), extra)
}

func (anthropicWire) Invalid(model string, stream bool) []byte {
	if stream {
		return []byte(`{"model":"` + model + `","stream":true,"messages":[]}`)
	}
	return []byte(`{"model":"` + model + `","messages":[{"role":"user","content":"no max_tokens"}]}`)
}

func (anthropicWire) Answer(raw []byte) (Answer, error) {
	var m struct {
		ID         string `json:"id"`
		Type       string `json:"type"`
		Role       string `json:"role"`
		Model      string `json:"model"`
		StopReason string `json:"stop_reason"`
		Content    []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		Usage llmfleet.Usage `json:"usage"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return Answer{}, fmt.Errorf("not a Message: %v", err)
	}
	if m.ID == "" || m.Type != "message" || m.Role != "assistant" || m.StopReason == "" {
		return Answer{}, errors.New("a Message without its id, type, role or stop_reason")
	}
	a := Answer{ID: m.ID, Model: m.Model, Usage: m.Usage}
	for _, c := range m.Content {
		if c.Type == "text" {
			a.Text += c.Text
		}
	}
	return a, nil
}

func (anthropicWire) StreamText(r io.Reader) (string, error) { return readStream(r) }

func (anthropicWire) Status(typ string) int { return claudewire.StatusForType(typ) }

func (anthropicWire) BadCredential() string { return "authentication_error" }

func (anthropicWire) ErrorTypes() []string {
	return []string{"overloaded_error", "permission_error", "not_found_error", "billing_error", "api_error"}
}

func (anthropicWire) NotFound() string { return "not_found_error" }

func (anthropicWire) Refusals() []int { return []int{400, 429, 529} }

func (anthropicWire) PoolHeaders() (http.Header, map[string]http.Header) {
	beta := func(vs ...string) http.Header {
		h := http.Header{}
		for _, v := range vs {
			h.Add("Anthropic-Beta", v)
		}
		return h
	}
	const b1, b2 = "prompt-caching-2024-07-31", "output-128k-2025-02-19"
	return beta(b1), map[string]http.Header{
		"no anthropic-beta": nil,
		"another beta":      beta(b2),
		"one more beta":     beta(b1, b2),
	}
}

type openAIChatWire struct{}

func (openAIChatWire) DefaultModel() string { return "gpt-5-mini" }

func (openAIChatWire) Body(model, prompt string, extra ...string) []byte {
	p, _ := json.Marshal(prompt)
	return withExtra(fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":%s}]`, model, p), extra)
}

func (openAIChatWire) Invalid(model string, stream bool) []byte {
	if stream {
		return []byte(`{"model":"` + model + `","stream":true,"messages":[]}`)
	}
	return []byte(`{"model":"` + model + `","messages":[]}`)
}

func (openAIChatWire) Answer(raw []byte) (Answer, error) {
	var c struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Model   string `json:"model"`
		Choices []struct {
			Message struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage json.RawMessage `json:"usage"`
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return Answer{}, fmt.Errorf("not a chat completion: %v", err)
	}
	if c.ID == "" || c.Object != "chat.completion" || len(c.Choices) == 0 ||
		c.Choices[0].Message.Role != "assistant" || c.Choices[0].FinishReason == "" {
		return Answer{}, errors.New("a chat completion without its id, object, choice, role or finish_reason")
	}
	return Answer{ID: c.ID, Model: c.Model, Text: c.Choices[0].Message.Content, Usage: openaiwire.UsageOf(c.Usage)}, nil
}

// StreamText reads chat.completion.chunk events: data-only, each a chunk
// of one id, ended by [DONE].
func (openAIChatWire) StreamText(r io.Reader) (string, error) {
	rd := sse.NewReader(r)
	text, id, done, finished := "", "", false, false
	for n := 0; ; n++ {
		ev, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", fmt.Errorf("after %d events: %w", n, err)
		}
		if done {
			return "", errors.New("an event after [DONE]")
		}
		if strings.TrimSpace(string(ev.Data)) == "[DONE]" {
			done = true
			continue
		}
		var c struct {
			ID      string `json:"id"`
			Object  string `json:"object"`
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Error json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(ev.Data, &c); err != nil {
			return "", fmt.Errorf("event %d: %v", n, err)
		}
		if c.Error != nil {
			return "", fmt.Errorf("error event in stream: %s", ev.Data)
		}
		if c.Object != "chat.completion.chunk" || c.ID == "" || (id != "" && c.ID != id) {
			return "", fmt.Errorf("event %d: not a chunk of the stream: %s", n, ev.Data)
		}
		id = c.ID
		for _, ch := range c.Choices {
			text += ch.Delta.Content
			if ch.FinishReason != nil {
				finished = true
			}
		}
	}
	if !done || !finished {
		return "", fmt.Errorf("stream without finish_reason (%v) or [DONE] (%v)", finished, done)
	}
	return text, nil
}

func (openAIChatWire) Status(typ string) int {
	switch typ {
	case "server_error":
		return http.StatusInternalServerError
	case "rate_limit_exceeded":
		return http.StatusTooManyRequests
	case "permission_error":
		return http.StatusForbidden
	}
	return http.StatusBadRequest
}

func (openAIChatWire) BadCredential() string { return "invalid_request_error" }

func (openAIChatWire) ErrorTypes() []string {
	return []string{"server_error", "rate_limit_exceeded", "permission_error"}
}

func (openAIChatWire) NotFound() string { return "invalid_request_error" }

func (openAIChatWire) Refusals() []int { return []int{400, 429} }

func (openAIChatWire) PoolHeaders() (http.Header, map[string]http.Header) {
	h := func(kv ...string) http.Header {
		out := http.Header{}
		for i := 0; i+1 < len(kv); i += 2 {
			out.Set(kv[i], kv[i+1])
		}
		return out
	}
	return h("OpenAI-Organization", "org-a", "OpenAI-Project", "proj-a"), map[string]http.Header{
		"no organization or project": nil,
		"another organization":       h("OpenAI-Organization", "org-b", "OpenAI-Project", "proj-a"),
		"another project":            h("OpenAI-Organization", "org-a", "OpenAI-Project", "proj-b"),
	}
}

func withExtra(b string, extra []string) []byte {
	for _, e := range extra {
		b += "," + e
	}
	return []byte(b + "}")
}
