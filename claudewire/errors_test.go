package claudewire

import (
	"encoding/json"
	"testing"
)

func TestStatusAndType(t *testing.T) {
	for typ, status := range statusOf {
		if got := StatusForType(typ); got != status {
			t.Errorf("StatusForType(%s) = %d, want %d", typ, got, status)
		}
		if got := TypeForStatus(status); got != typ {
			t.Errorf("TypeForStatus(%d) = %s, want %s", status, got, typ)
		}
	}
	for status, want := range map[int]string{418: "invalid_request_error", 502: "api_error", 503: "api_error"} {
		if got := TypeForStatus(status); got != want {
			t.Errorf("TypeForStatus(%d) = %s, want %s", status, got, want)
		}
	}
	if got := StatusForType("teapot_error"); got != 500 {
		t.Errorf("unknown type: %d", got)
	}
}

func TestEnvelope(t *testing.T) {
	var env struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
		RequestID string `json:"request_id"`
	}
	if err := json.Unmarshal(Envelope("rate_limit_error", `slow "down"`, "req_1"), &env); err != nil {
		t.Fatal(err)
	}
	if env.Type != "error" || env.Error.Type != "rate_limit_error" || env.Error.Message != `slow "down"` || env.RequestID != "req_1" {
		t.Fatalf("%+v", env)
	}
}

func TestParseMessageInfo(t *testing.T) {
	m, err := ParseMessageInfo([]byte(`{"id":"msg_1","model":"m","stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":4,"cache_creation":{"ephemeral_1h_input_tokens":5}}}`))
	if err != nil || m.ID != "msg_1" || m.Model != "m" || m.Usage.InputTokens != 3 || m.Usage.OutputTokens != 4 || m.Usage.CacheCreation.Ephemeral1hInputTokens != 5 {
		t.Fatalf("%+v %v", m, err)
	}
}
