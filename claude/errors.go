package claude

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/claudewire"
)

// envelope is the Anthropic error body:
// {"type":"error","error":{"type":...,"message":...},"request_id":...}.
type envelope struct {
	Type  string `json:"type"`
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
	RequestID string `json:"request_id"`
}

// parseError turns an error answer into an *llmfleet.Error. A body that is
// not an error envelope still gives an Error, typed by its status.
func parseError(status int, h http.Header, body []byte, now time.Time) *llmfleet.Error {
	e := &llmfleet.Error{StatusCode: status, Body: body}
	var env envelope
	if json.Unmarshal(body, &env) == nil && env.Error.Type != "" {
		e.Type = env.Error.Type
		e.Message = env.Error.Message
		e.RequestID = env.RequestID
	} else {
		e.Type = claudewire.TypeForStatus(status)
		e.Message = strings.TrimSpace(string(body))
		if len(e.Message) > 512 {
			cut := 512
			for cut > 508 && !utf8.RuneStart(e.Message[cut]) {
				cut-- // not inside a UTF-8 sequence
			}
			e.Message = e.Message[:cut] + "…"
		}
		if e.Message == "" {
			e.Message = http.StatusText(status)
		}
	}
	if e.RequestID == "" && h != nil {
		e.RequestID = h.Get("Request-Id")
	}
	if d, ok := retryAfter(h, now); ok {
		e.RetryAfter = d
	}
	return e
}

// localError is an error found before anything was sent, in the shape of the
// provider's error envelope.
func localError(status int, typ, msg string) *llmfleet.Error {
	var env envelope
	env.Type = "error"
	env.Error.Type = typ
	env.Error.Message = msg
	body, _ := json.Marshal(env)
	return &llmfleet.Error{StatusCode: status, Type: typ, Message: msg, Body: body}
}
