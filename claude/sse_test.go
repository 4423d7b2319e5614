package claude

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/llmfleet/llmfleet"
)

const exampleStream = "event: message_start\n" +
	`data: {"type":"message_start","message":{"id":"msg_01X","type":"message","role":"assistant","model":"claude-sonnet-4-6","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":472,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":2}}}` + "\n\n" +
	"event: content_block_start\n" +
	`data: {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}` + "\n\n" +
	"event: content_block_delta\n" +
	`data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me "}}` + "\n\n" +
	": a comment\n" +
	"event: ping\n" +
	`data: {"type": "ping"}` + "\n\n" +
	"event: content_block_delta\n" +
	`data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"check."}}` + "\n\n" +
	"event: content_block_delta\n" +
	`data: {"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"sig=="}}` + "\n\n" +
	"event: content_block_stop\n" +
	`data: {"type":"content_block_stop","index":0}` + "\n\n" +
	"event: content_block_start\r\n" +
	`data: {"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}` + "\r\n\r\n" +
	"event: content_block_delta\n" +
	`data: {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Checking"}}` + "\n\n" +
	"event: content_block_delta\n" +
	`data: {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":" now"}}` + "\n\n" +
	"event: content_block_stop\n" +
	`data: {"type":"content_block_stop","index":1}` + "\n\n" +
	"event: content_block_start\n" +
	`data: {"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_01T","name":"get_weather","input":{}}}` + "\n\n" +
	"event: content_block_delta\n" +
	`data: {"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":""}}` + "\n\n" +
	"event: content_block_delta\n" +
	`data: {"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"city\": \"Par"}}` + "\n\n" +
	"event: content_block_delta\n" +
	`data: {"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"is\", \"days\": 3}"}}` + "\n\n" +
	"event: content_block_stop\n" +
	`data: {"type":"content_block_stop","index":2}` + "\n\n" +
	"event: message_delta\n" +
	`data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":89,"input_tokens":null}}` + "\n\n" +
	"event: message_stop\n" +
	`data: {"type":"message_stop"}` + "\n\n"

// TestReadMessageWithoutEventNames reads a stream whose events have no
// event field: each is named by the type in its data.
func TestReadMessageWithoutEventNames(t *testing.T) {
	var b strings.Builder
	for _, line := range strings.SplitAfter(exampleStream, "\n") {
		if !strings.HasPrefix(line, "event:") {
			b.WriteString(line)
		}
	}
	want, err := ReadMessage(strings.NewReader(exampleStream))
	if err != nil {
		t.Fatal(err)
	}
	got, err := ReadMessage(strings.NewReader(b.String()))
	if err != nil || string(got) != string(want) {
		t.Errorf("without event names: %s, %v; want %s", got, err, want)
	}
}

func TestReadMessage(t *testing.T) {
	raw, err := ReadMessage(strings.NewReader(exampleStream))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		ID         string `json:"id"`
		StopReason string `json:"stop_reason"`
		Content    []struct {
			Type      string         `json:"type"`
			Text      string         `json:"text"`
			Thinking  string         `json:"thinking"`
			Signature string         `json:"signature"`
			Input     map[string]any `json:"input"`
		} `json:"content"`
		Usage llmfleet.Usage `json:"usage"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if m.ID != "msg_01X" || m.StopReason != "tool_use" || len(m.Content) != 3 {
		t.Fatalf("message %s", raw)
	}
	if c := m.Content[0]; c.Type != "thinking" || c.Thinking != "Let me check." || c.Signature != "sig==" {
		t.Errorf("thinking %+v", c)
	}
	if c := m.Content[1]; c.Type != "text" || c.Text != "Checking now" {
		t.Errorf("text %+v", c)
	}
	if c := m.Content[2]; c.Type != "tool_use" || c.Input["city"] != "Paris" || c.Input["days"] != float64(3) {
		t.Errorf("tool %+v", c)
	}
	if m.Usage.InputTokens != 472 || m.Usage.OutputTokens != 89 {
		t.Errorf("usage %+v", m.Usage)
	}
}

func TestReadMessageErrors(t *testing.T) {
	cut := exampleStream[:strings.Index(exampleStream, "event: message_delta")]
	if _, err := ReadMessage(strings.NewReader(cut)); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("cut: %v", err)
	}
	withErr := cut + "event: error\n" + `data: {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}` + "\n\n"
	_, err := ReadMessage(strings.NewReader(withErr))
	var e *llmfleet.Error
	if !errors.As(err, &e) || e.StatusCode != 529 || e.Type != "overloaded_error" || e.Message != "Overloaded" {
		t.Errorf("error event: %v", err)
	}
}
