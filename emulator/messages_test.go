package emulator

import (
	"net/http"
	"strings"
	"testing"
)

func TestMessageReply(t *testing.T) {
	e := newEnv(t)
	body := mustJSON(t, msgBody("hello there"))
	r := e.do("POST", "/v1/messages", body)
	if r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	if r.header.Get("request-id") == "" {
		t.Error("no request-id header")
	}
	m := r.json(t)
	want, err := ReplyText(body)
	if err != nil || want != "Answer to: hello there" {
		t.Fatalf("ReplyText = %q, %v", want, err)
	}
	content := m["content"].([]any)
	if len(content) != 1 || content[0].(map[string]any)["text"] != want {
		t.Fatalf("content %v", content)
	}
	if m["id"] != MessageID(body) || !strings.HasPrefix(m["id"].(string), "msg_01") {
		t.Errorf("id %v, want %s", m["id"], MessageID(body))
	}
	if m["type"] != "message" || m["role"] != "assistant" || m["stop_reason"] != "end_turn" || m["stop_sequence"] != nil {
		t.Errorf("message %s", r.body)
	}
	u := m["usage"].(map[string]any)
	if u["input_tokens"].(float64) < 1 || u["output_tokens"].(float64) < 1 || u["service_tier"] != "standard" {
		t.Errorf("usage %v", u)
	}
	for _, k := range []string{"cache_creation_input_tokens", "cache_read_input_tokens", "cache_creation"} {
		if _, ok := u[k]; !ok {
			t.Errorf("usage lacks %s", k)
		}
	}
	// Same body, same answer.
	r2 := e.do("POST", "/v1/messages", body)
	if m2 := r2.json(t); m2["id"] != m["id"] {
		t.Error("reply not deterministic")
	}
	if r2.header.Get("request-id") == r.header.Get("request-id") {
		t.Error("request ids repeat")
	}
}

func TestAuthAndEnvelopes(t *testing.T) {
	e := newEnv(t)
	body := mustJSON(t, msgBody("x"))
	errType(t, e.do("POST", "/v1/messages", body, "X-Api-Key", ""), 401, "authentication_error")
	errType(t, e.do("POST", "/v1/messages", body, "Anthropic-Version", ""), 400, "invalid_request_error")
	errType(t, e.do("POST", "/v1/messages", body, "Anthropic-Version", "2024-01-01"), 400, "invalid_request_error")
	// The version the SDK majors of October 2026 send.
	if r := e.do("POST", "/v1/messages", body, "Anthropic-Version", "2026-10-21"); r.status != 200 {
		t.Fatalf("anthropic-version 2026-10-21: %d %s", r.status, r.body)
	}
	if r := e.do("POST", "/v1/messages?beta=true", body, "X-Api-Key", "", "Authorization", "Bearer tok",
		"X-Stainless-Retry-Count", "1", "Anthropic-Beta", "made-up-2099"); r.status != 200 {
		t.Fatalf("bearer: %d %s", r.status, r.body)
	}
	errType(t, e.do("GET", "/v1/nothing", nil), 404, "not_found_error")
	errType(t, e.do("GET", "/v1/messages", nil), 405, "invalid_request_error")
	e.s.Keys = []string{"good"}
	errType(t, e.do("POST", "/v1/messages", body), 401, "authentication_error")
	if r := e.do("POST", "/v1/messages", body, "X-Api-Key", "good"); r.status != 200 {
		t.Fatalf("good key: %d", r.status)
	}
}

func TestValidation(t *testing.T) {
	e := newEnv(t)
	cases := []struct {
		name string
		body any
	}{
		{"malformed", "{not json"},
		{"no model", map[string]any{"max_tokens": 5, "messages": []any{map[string]any{"role": "user", "content": "x"}}}},
		{"no max_tokens", map[string]any{"model": "m", "messages": []any{map[string]any{"role": "user", "content": "x"}}}},
		{"negative max_tokens", msgBody("x", "max_tokens", -1)},
		{"no messages", map[string]any{"model": "m", "max_tokens": 5}},
		{"empty messages", msgBody("x", "messages", []any{})},
		{"bad role", msgBody("x", "messages", []any{map[string]any{"role": "tool", "content": "x"}})},
		{"empty system message", msgBody("x", "messages", []any{map[string]any{"role": "user", "content": "x"}, map[string]any{"role": "system", "content": ""}})},
		{"empty content", msgBody("")},
		{"unknown field", msgBody("x", "frobnicate", true)},
		{"stream max_tokens 0", msgBody("x", "max_tokens", 0, "stream", true)},
		{"temperature", msgBody("x", "temperature", 2)},
		{"thinking budget", msgBody("x", "thinking", map[string]any{"type": "enabled", "budget_tokens": 10})},
		{"tool_choice unknown tool", msgBody("x", "tools", []any{toolDef("a")}, "tool_choice", map[string]any{"type": "tool", "name": "b"})},
		{"five breakpoints", msgBody("x", "system", []any{cached("a"), cached("b"), cached("c"), cached("d"), cached("e")})},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			errType(t, e.do("POST", "/v1/messages", c.body), 400, "invalid_request_error")
		})
	}
	big := strings.Repeat("a", MaxMessageBytes+1)
	errType(t, e.do("POST", "/v1/messages", big), http.StatusRequestEntityTooLarge, "request_too_large")
}

func toolDef(name string) map[string]any {
	return map[string]any{"name": name, "description": "d", "input_schema": map[string]any{"type": "object"}}
}

func cached(text string, ttl ...string) map[string]any {
	cc := map[string]any{"type": "ephemeral"}
	if len(ttl) > 0 {
		cc["ttl"] = ttl[0]
	}
	return map[string]any{"type": "text", "text": text, "cache_control": cc}
}
