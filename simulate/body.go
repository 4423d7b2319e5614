package simulate

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/emulator"
)

// Body is the synthetic request body the simulated provider reads: the
// model, and the usage its answer reports.
type Body struct {
	Model        string `json:"model"`
	ID           string `json:"id,omitempty"`
	InputTokens  int64  `json:"input_tokens"`
	OutputTokens int64  `json:"output_tokens"`
	// CacheRead and CacheWrite are prompt cache reads and 5-minute writes.
	CacheRead  int64 `json:"cache_read_input_tokens,omitempty"`
	CacheWrite int64 `json:"cache_creation_input_tokens,omitempty"`
	// Prompt, when not nil, is the prompt's structure: the answer's input
	// usage then comes from the provider's prompt cache (Provider.Cache),
	// not from the members above.
	Prompt *BodyPrompt `json:"prompt,omitempty"`

	text string // the answer's text
}

// parseBody reads a body: the simulator's own (see bodyOf), or a Messages
// API create-message body, answered as llmfleet's emulator answers it
// (its reply text, its input tokens, a quarter of the text's characters
// as output tokens).
func parseBody(raw []byte) (Body, error) {
	if b, ok := parseOwn(raw); ok {
		b.text = "ok"
		return b, nil
	}
	// The simulator's own body, laid out otherwise (escapes in its id).
	var own Body
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if dec.Decode(&own) == nil && own.Model != "" && !dec.More() {
		if own.Prompt != nil {
			if err := own.Prompt.check(own.InputTokens); err != nil {
				return Body{}, apiError("invalid_request_error", err.Error())
			}
		}
		own.text = "ok"
		return own, nil
	}
	text, err := emulator.ReplyText(raw)
	if err != nil {
		typ, msg, _ := strings.Cut(err.Error(), ": ")
		return Body{}, apiError(typ, msg)
	}
	var m struct {
		Model     string `json:"model"`
		MaxTokens int64  `json:"max_tokens"`
	}
	_ = json.Unmarshal(raw, &m)
	if m.MaxTokens < 1 {
		return Body{}, apiError("invalid_request_error", "max_tokens: must be greater than or equal to 1")
	}
	in, _ := emulator.InputTokens(raw)
	return Body{Model: m.Model, ID: emulator.MessageID(raw), InputTokens: in, OutputTokens: int64(len(text)/4 + 1), text: text}, nil
}

// parseOwn reads a body exactly as bodyOf writes it, without the cost of
// encoding/json (the simulator reads each body several times); false for
// any other.
func parseOwn(raw []byte) (Body, bool) {
	var b Body
	s := string(raw)
	field := func(name string, quoted bool) (string, bool) {
		pre := `"` + name + `":`
		if !strings.HasPrefix(s, pre) {
			return "", false
		}
		s = s[len(pre):]
		end := strings.IndexAny(s, ",}")
		if end < 0 {
			return "", false
		}
		v := s[:end]
		s = s[end+1:]
		if quoted {
			u, err := strconv.Unquote(v)
			return u, err == nil && !strings.ContainsAny(u, `",}\`)
		}
		return v, true
	}
	if !strings.HasPrefix(s, "{") {
		return b, false
	}
	s = s[1:]
	var ok bool
	var in, out string
	if b.Model, ok = field("model", true); !ok || b.Model == "" {
		return b, false
	}
	if b.ID, ok = field("id", true); !ok {
		return b, false
	}
	if in, ok = field("input_tokens", false); !ok {
		return b, false
	}
	if out, ok = field("output_tokens", false); !ok {
		return b, false
	}
	var err1, err2, err3, err4 error
	b.InputTokens, err1 = strconv.ParseInt(in, 10, 64)
	b.OutputTokens, err2 = strconv.ParseInt(out, 10, 64)
	if s != "" {
		var cr, cw string
		if cr, ok = field("cache_read_input_tokens", false); !ok {
			return b, false
		}
		if cw, ok = field("cache_creation_input_tokens", false); !ok || s != "" {
			return b, false
		}
		b.CacheRead, err3 = strconv.ParseInt(cr, 10, 64)
		b.CacheWrite, err4 = strconv.ParseInt(cw, 10, 64)
	}
	return b, err1 == nil && err2 == nil && err3 == nil && err4 == nil
}

// message is the answer to a body: a Messages API message, with the
// usage the body names.
func message(b Body) (json.RawMessage, llmfleet.Usage) {
	u := usageOf(b)
	return messageOf(b, u), u
}

// messageOf is the answer to a body reporting usage u.
func messageOf(b Body, u llmfleet.Usage) json.RawMessage {
	id := b.ID
	if !strings.HasPrefix(id, "msg_") {
		id = "msg_sim_" + id
	}
	m := make([]byte, 0, 256)
	m = append(m, `{"id":`...)
	m = appendString(m, id)
	m = append(m, `,"type":"message","role":"assistant","model":`...)
	m = appendString(m, b.Model)
	m = append(m, `,"content":[{"type":"text","text":`...)
	m = appendString(m, b.text)
	m = append(m, `}],"stop_reason":"end_turn","usage":{"input_tokens":`...)
	m = strconv.AppendInt(m, u.InputTokens, 10)
	m = append(m, `,"output_tokens":`...)
	m = strconv.AppendInt(m, u.OutputTokens, 10)
	if u.CacheReadInputTokens != 0 || u.CacheCreationInputTokens != 0 {
		m = append(m, `,"cache_read_input_tokens":`...)
		m = strconv.AppendInt(m, u.CacheReadInputTokens, 10)
		m = append(m, `,"cache_creation_input_tokens":`...)
		m = strconv.AppendInt(m, u.CacheCreationInputTokens, 10)
		m = append(m, `,"cache_creation":{"ephemeral_5m_input_tokens":`...)
		m = strconv.AppendInt(m, u.CacheCreation.Ephemeral5mInputTokens, 10)
		m = append(m, `,"ephemeral_1h_input_tokens":`...)
		m = strconv.AppendInt(m, u.CacheCreation.Ephemeral1hInputTokens, 10)
		m = append(m, '}')
	}
	return append(m, `}}`...)
}

// usageOf is the usage the answer to b reports.
func usageOf(b Body) llmfleet.Usage {
	u := llmfleet.Usage{InputTokens: b.InputTokens, OutputTokens: b.OutputTokens,
		CacheReadInputTokens: b.CacheRead, CacheCreationInputTokens: b.CacheWrite}
	u.CacheCreation.Ephemeral5mInputTokens = b.CacheWrite
	return u
}

// appendString appends s as a JSON string.
func appendString(m []byte, s string) []byte {
	if !strings.ContainsAny(s, "\"\\<>&") && isPlain(s) {
		return append(append(append(m, '"'), s...), '"')
	}
	q, _ := json.Marshal(s)
	return append(m, q...)
}

// isPlain reports whether s is printable ASCII.
func isPlain(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// bodyOf is the synthetic body of one turn.
func bodyOf(model, id string, in, out, cacheRead, cacheWrite int64) json.RawMessage {
	b := make([]byte, 0, 128)
	b = append(b, `{"model":`...)
	b = appendString(b, model)
	b = append(b, `,"id":`...)
	b = appendString(b, id)
	b = append(b, `,"input_tokens":`...)
	b = strconv.AppendInt(b, in, 10)
	b = append(b, `,"output_tokens":`...)
	b = strconv.AppendInt(b, out, 10)
	if cacheRead != 0 || cacheWrite != 0 {
		b = append(b, `,"cache_read_input_tokens":`...)
		b = strconv.AppendInt(b, cacheRead, 10)
		b = append(b, `,"cache_creation_input_tokens":`...)
		b = strconv.AppendInt(b, cacheWrite, 10)
	}
	return append(b, '}')
}
