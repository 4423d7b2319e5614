package proxy

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/llmfleet/llmfleet/jsonmember"
)

// MaxBodyBytes is the largest create-message body the API accepts (32 MB);
// a larger one gets a 413 request_too_large.
const MaxBodyBytes = 32 << 20

// batchBody checks body, a create-message body bound for a batch, the way
// the API would before it queues it, and returns it without its "stream"
// member and whether the caller asked for a stream. Only the top level is
// looked at; the body is never re-encoded.
func batchBody(body []byte) (params []byte, stream bool, e *apiError) {
	if !json.Valid(body) {
		return nil, false, invalidRequest("The request body is not valid JSON.")
	}
	ms, err := jsonmember.Members(body)
	if err != nil {
		return nil, false, invalidRequest("The request body must be a JSON object.")
	}
	m, ok := jsonmember.Find(ms, "model")
	if !ok {
		return nil, false, invalidRequest("model: Field required")
	}
	if v := m.Value(body); v[0] != '"' || bytes.Equal(v, []byte(`""`)) {
		return nil, false, invalidRequest("model: Input should be a non-empty string")
	}
	m, ok = jsonmember.Find(ms, "max_tokens")
	if !ok {
		return nil, false, invalidRequest("max_tokens: Field required")
	}
	n, err := strconv.ParseInt(string(m.Value(body)), 10, 64)
	if err != nil {
		return nil, false, invalidRequest("max_tokens: Input should be a valid integer")
	}
	if n < 1 {
		return nil, false, invalidRequest("max_tokens: Input should be greater than or equal to 1 for a batched request")
	}
	m, ok = jsonmember.Find(ms, "messages")
	if !ok {
		return nil, false, invalidRequest("messages: Field required")
	}
	if v := m.Value(body); v[0] != '[' {
		return nil, false, invalidRequest("messages: Input should be a valid list")
	} else if len(bytes.TrimSpace(v[1:len(v)-1])) == 0 {
		return nil, false, invalidRequest("messages: at least one message is required")
	}
	m, ok = jsonmember.Find(ms, "stream")
	if !ok {
		return body, false, nil
	}
	switch string(m.Value(body)) {
	case "true":
		stream = true
	case "false", "null":
	default:
		return nil, false, invalidRequest("stream: Input should be a valid boolean")
	}
	params, err = jsonmember.Delete(body, "stream")
	if err != nil {
		return nil, false, invalidRequest("The request body is not valid JSON.")
	}
	return params, stream, nil
}

// lastUserHasToolResult reports whether the last user message of body
// carries a tool_result block.
func lastUserHasToolResult(body []byte) bool {
	var b struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if json.Unmarshal(body, &b) != nil {
		return false
	}
	for i := len(b.Messages) - 1; i >= 0; i-- {
		if b.Messages[i].Role != "user" {
			continue
		}
		var blocks []struct {
			Type string `json:"type"`
		}
		json.Unmarshal(b.Messages[i].Content, &blocks)
		for _, bl := range blocks {
			if bl.Type == "tool_result" {
				return true
			}
		}
		return false
	}
	return false
}

// tooLarge is the answer to a body over MaxBodyBytes.
var tooLarge = &apiError{http.StatusRequestEntityTooLarge, "request_too_large", "Request exceeds the maximum allowed number of bytes."}
