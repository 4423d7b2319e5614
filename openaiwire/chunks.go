package openaiwire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/llmfleet/llmfleet/jsonmember"
	"github.com/llmfleet/llmfleet/sse"
)

// completion is what a chat.completion is read as to be streamed.
type completion struct {
	ID                string          `json:"id"`
	Created           int64           `json:"created"`
	Model             string          `json:"model"`
	SystemFingerprint json.RawMessage `json:"system_fingerprint"`
	ServiceTier       json.RawMessage `json:"service_tier"`
	Choices           []struct {
		Index   int `json:"index"`
		Message struct {
			Role      string            `json:"role"`
			Content   json.RawMessage   `json:"content"`
			Refusal   json.RawMessage   `json:"refusal"`
			ToolCalls []json.RawMessage `json:"tool_calls"`
		} `json:"message"`
		Logprobs     json.RawMessage `json:"logprobs"`
		FinishReason json.RawMessage `json:"finish_reason"`
	} `json:"choices"`
	Usage json.RawMessage `json:"usage"`
}

// AppendChunks appends to buf the server-sent events a chat completion
// would have been streamed as (stream: true): per choice, a first chunk
// with the role and empty content, one with the content (or the refusal),
// one per tool call (its index added), and one with the finish reason;
// then, if includeUsage (stream_options.include_usage), a chunk with no
// choices and the usage; then "data: [DONE]". Each chunk is a
// chat.completion.chunk with the completion's id, created, model,
// system_fingerprint and service_tier; with includeUsage every chunk but
// the last carries "usage": null, as the API sends them.
func AppendChunks(buf []byte, body []byte, includeUsage bool) ([]byte, error) {
	var c completion
	if err := json.Unmarshal(body, &c); err != nil {
		return buf, fmt.Errorf("openaiwire: not a chat completion: %w", err)
	}
	var ev []byte // the data of one chunk
	head := func(b []byte) []byte {
		b = append(b, `{"id":`...)
		b = appendString(b, c.ID)
		b = append(b, `,"object":"chat.completion.chunk","created":`...)
		b = strconv.AppendInt(b, c.Created, 10)
		b = append(b, `,"model":`...)
		b = appendString(b, c.Model)
		b = append(b, `,"system_fingerprint":`...)
		b = appendRaw(b, c.SystemFingerprint)
		b = append(b, `,"service_tier":`...)
		b = appendRaw(b, c.ServiceTier)
		return b
	}
	chunk := func(buf []byte, index int, delta string, finish, logprobs json.RawMessage) []byte {
		b := head(ev[:0])
		b = append(b, `,"choices":[{"index":`...)
		b = strconv.AppendInt(b, int64(index), 10)
		b = append(b, `,"delta":`...)
		b = append(b, delta...)
		b = append(b, `,"logprobs":`...)
		b = appendRaw(b, logprobs)
		b = append(b, `,"finish_reason":`...)
		b = appendRaw(b, finish)
		b = append(b, '}', ']')
		if includeUsage {
			b = append(b, `,"usage":null`...)
		}
		ev = append(b, '}')
		return sse.AppendEvent(buf, "", ev)
	}
	for _, ch := range c.Choices {
		role := ch.Message.Role
		if role == "" {
			role = "assistant"
		}
		buf = chunk(buf, ch.Index, `{"role":`+string(appendString(nil, role))+`,"content":"","refusal":null}`, nil, nil)
		if isString(ch.Message.Content) && string(ch.Message.Content) != `""` {
			buf = chunk(buf, ch.Index, `{"content":`+string(ch.Message.Content)+`}`, nil, ch.Logprobs)
		}
		if isString(ch.Message.Refusal) {
			buf = chunk(buf, ch.Index, `{"refusal":`+string(ch.Message.Refusal)+`}`, nil, nil)
		}
		for i, tc := range ch.Message.ToolCalls {
			call, err := jsonmember.Set(tc, "index", strconv.AppendInt(nil, int64(i), 10))
			if err != nil {
				return buf, fmt.Errorf("openaiwire: tool call %d: %w", i, err)
			}
			buf = chunk(buf, ch.Index, `{"tool_calls":[`+string(compact(call))+`]}`, nil, nil)
		}
		finish := ch.FinishReason
		if len(finish) == 0 {
			finish = json.RawMessage(`"stop"`)
		}
		buf = chunk(buf, ch.Index, `{}`, finish, nil)
	}
	if includeUsage {
		ev = head(ev[:0])
		ev = append(ev, `,"choices":[],"usage":`...)
		ev = appendRaw(ev, c.Usage)
		buf = sse.AppendEvent(buf, "", append(ev, '}'))
	}
	return sse.AppendEvent(buf, "", []byte("[DONE]")), nil
}

// appendRaw appends a raw JSON value, compacted (a data line holds no
// line break), or null for none.
func appendRaw(b []byte, v json.RawMessage) []byte {
	if len(v) == 0 {
		return append(b, "null"...)
	}
	return append(b, compact(v)...)
}

// compact returns v without insignificant white space.
func compact(v []byte) []byte {
	var out bytes.Buffer
	if json.Compact(&out, v) != nil {
		return v // unmarshalled already, so valid: cannot be
	}
	return out.Bytes()
}

// appendString appends s as a JSON string.
func appendString(b []byte, s string) []byte {
	q, _ := json.Marshal(s)
	return append(b, q...)
}

// isString reports whether a raw value is a JSON string (not null, not
// absent).
func isString(v json.RawMessage) bool { return len(v) > 0 && v[0] == '"' }
