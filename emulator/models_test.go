package emulator

import (
	"testing"
)

// Mid-conversation system messages (role "system" inside messages), as
// current Claude Code releases send them, are accepted in sync, streamed and
// batched requests, with string or block content.
func TestSystemRoleMessages(t *testing.T) {
	e := newEnv(t)
	msgs := []any{
		map[string]any{"role": "system", "content": "be brief"},
		map[string]any{"role": "user", "content": "hello"},
		map[string]any{"role": "assistant", "content": "hi"},
		map[string]any{"role": "system", "content": []any{map[string]any{"type": "text", "text": "tools changed"}}},
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "again"}}},
	}
	body := msgBody("", "messages", msgs, "diagnostics", map[string]any{"previous_message_id": "msg_x"})
	r := e.do("POST", "/v1/messages", body)
	if r.status != 200 {
		t.Fatalf("sync: %d %s", r.status, r.body)
	}
	if got := r.json(t)["content"].([]any)[0].(map[string]any)["text"]; got != "Answer to: again" {
		t.Errorf("reply %v", got)
	}
	body["stream"] = true
	if r := e.do("POST", "/v1/messages", body); r.status != 200 {
		t.Fatalf("stream: %d %s", r.status, r.body)
	}
	delete(body, "stream")
	delete(body, "diagnostics")
	batch := map[string]any{"requests": []any{map[string]any{"custom_id": "a", "params": body}}}
	if r := e.do("POST", "/v1/messages/batches", batch); r.status != 200 {
		t.Fatalf("batch: %d %s", r.status, r.body)
	}
	ct := map[string]any{"model": "claude-sonnet-4-6", "messages": msgs}
	if r := e.do("POST", "/v1/messages/count_tokens", ct); r.status != 200 {
		t.Fatalf("count_tokens: %d %s", r.status, r.body)
	}
}

func TestModelsList(t *testing.T) {
	e := newEnv(t)
	e.s.Models = []string{"claude-3-5-haiku-20241022", "claude-sonnet-4-6", "claude-opus-4-20250514", "claude-haiku-4-5-20251001"}
	r := e.do("GET", "/v1/models", nil)
	if r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	m := r.json(t)
	data := m["data"].([]any)
	var ids []string
	for _, d := range data {
		dm := d.(map[string]any)
		if dm["type"] != "model" || dm["display_name"] == "" || dm["created_at"] == "" {
			t.Errorf("model %v", dm)
		}
		ids = append(ids, dm["id"].(string))
	}
	want := []string{"claude-sonnet-4-6", "claude-haiku-4-5-20251001", "claude-opus-4-20250514", "claude-3-5-haiku-20241022"}
	if len(ids) != len(want) {
		t.Fatalf("ids %v, want %v", ids, want)
	}
	for i := range want {
		if ids[i] != want[i] {
			t.Fatalf("ids %v, want %v", ids, want)
		}
	}
	if m["has_more"] != false || m["first_id"] != want[0] || m["last_id"] != want[3] {
		t.Errorf("page %s", r.body)
	}

	p := e.do("GET", "/v1/models?limit=2", nil).json(t)
	if p["has_more"] != true || p["first_id"] != want[0] || p["last_id"] != want[1] {
		t.Errorf("limit=2: %v", p)
	}
	p = e.do("GET", "/v1/models?limit=2&after_id="+want[1], nil).json(t)
	if p["has_more"] != false || p["first_id"] != want[2] || p["last_id"] != want[3] {
		t.Errorf("after_id: %v", p)
	}
	p = e.do("GET", "/v1/models?limit=1&before_id="+want[2], nil).json(t)
	if p["has_more"] != true || p["first_id"] != want[1] || p["last_id"] != want[1] {
		t.Errorf("before_id: %v", p)
	}
	errType(t, e.do("GET", "/v1/models?limit=0", nil), 400, "invalid_request_error")
	errType(t, e.do("GET", "/v1/models?after_id=nope", nil), 400, "invalid_request_error")
	errType(t, e.do("POST", "/v1/models", nil), 405, "invalid_request_error")

	one := e.do("GET", "/v1/models/claude-3-5-haiku-20241022", nil)
	if one.status != 200 {
		t.Fatalf("%d %s", one.status, one.body)
	}
	if o := one.json(t); o["display_name"] != "Claude 3.5 Haiku" || o["created_at"] != "2024-10-22T00:00:00Z" {
		t.Errorf("model %v", o)
	}
	errType(t, e.do("GET", "/v1/models/claude-nope", nil), 404, "not_found_error")
	errType(t, e.do("GET", "/v1/models/claude-sonnet-4-6", nil, "X-Api-Key", ""), 401, "authentication_error")
}

// With no Models set the emulator lists the price table's Anthropic models.
func TestModelsDefault(t *testing.T) {
	e := newEnv(t)
	if r := e.do("GET", "/v1/models/claude-sonnet-4-6", nil); r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if n := len(e.do("GET", "/v1/models?limit=1000", nil).json(t)["data"].([]any)); n < 5 {
		t.Errorf("%d models", n)
	}
}
