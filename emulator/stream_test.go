package emulator

import (
	"bytes"
	"encoding/json"
	"io"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet/sse"
)

type event struct {
	name string
	data map[string]any
	raw  string
}

// parseSSE parses an SSE body, checking the framing: every event has a
// name and one data line, byte for byte as sse.AppendEvent writes it.
func parseSSE(t *testing.T, body []byte) []event {
	t.Helper()
	var out []event
	var again []byte
	rd := sse.NewReader(bytes.NewReader(body))
	for {
		ev, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("reading the stream: %v", err)
		}
		again = sse.AppendEvent(again, ev.Name, ev.Data)
		var m map[string]any
		if err := json.Unmarshal(ev.Data, &m); err != nil {
			t.Fatalf("data %q: %v", ev.Data, err)
		}
		if m["type"] != ev.Name {
			t.Fatalf("event %s carries type %v", ev.Name, m["type"])
		}
		if !bytes.HasPrefix(ev.Data, []byte(`{"type":`)) {
			t.Errorf("type is not the first field: %s", ev.Data)
		}
		out = append(out, event{ev.Name, m, string(ev.Data)})
	}
	if !bytes.Equal(again, body) {
		t.Fatalf("stream framing: got %q, want it as written by sse.AppendEvent: %q", body, again)
	}
	return out
}

// assemble rebuilds the Message from a stream, checking the event order.
func assemble(t *testing.T, evs []event) map[string]any {
	t.Helper()
	var msg map[string]any
	var content []map[string]any
	var partial []string
	open := -1
	state := "start"
	for _, ev := range evs {
		d := ev.data
		switch ev.name {
		case "ping":
		case "message_start":
			if state != "start" {
				t.Fatal("message_start twice")
			}
			state = "blocks"
			msg = d["message"].(map[string]any)
			if msg["stop_reason"] != nil || len(msg["content"].([]any)) != 0 {
				t.Fatalf("message_start %v", msg)
			}
		case "content_block_start":
			idx := int(d["index"].(float64))
			if state != "blocks" || open != -1 || idx != len(content) {
				t.Fatalf("content_block_start %d out of order", idx)
			}
			open = idx
			content = append(content, d["content_block"].(map[string]any))
			partial = append(partial, "")
		case "content_block_delta":
			idx := int(d["index"].(float64))
			if idx != open {
				t.Fatalf("delta for %d while %d open", idx, open)
			}
			delta := d["delta"].(map[string]any)
			b := content[idx]
			switch delta["type"] {
			case "text_delta":
				b["text"] = b["text"].(string) + delta["text"].(string)
			case "thinking_delta":
				if b["signature"] != "" {
					t.Fatal("thinking_delta after signature_delta")
				}
				b["thinking"] = b["thinking"].(string) + delta["thinking"].(string)
			case "signature_delta":
				b["signature"] = b["signature"].(string) + delta["signature"].(string)
			case "input_json_delta":
				partial[idx] += delta["partial_json"].(string)
			default:
				t.Fatalf("delta %v", delta)
			}
		case "content_block_stop":
			idx := int(d["index"].(float64))
			if idx != open {
				t.Fatalf("stop for %d while %d open", idx, open)
			}
			if content[idx]["type"] == "tool_use" {
				var in any
				if err := json.Unmarshal([]byte(partial[idx]), &in); err != nil {
					t.Fatalf("tool input %q: %v", partial[idx], err)
				}
				content[idx]["input"] = in
			}
			open = -1
		case "message_delta":
			if open != -1 {
				t.Fatal("message_delta with an open block")
			}
			state = "delta"
			delta := d["delta"].(map[string]any)
			msg["stop_reason"] = delta["stop_reason"]
			msg["stop_sequence"] = delta["stop_sequence"]
			u := msg["usage"].(map[string]any)
			for k, v := range d["usage"].(map[string]any) {
				u[k] = v
			}
		case "message_stop":
			if state != "delta" {
				t.Fatal("message_stop before message_delta")
			}
			state = "stopped"
		default:
			t.Fatalf("unexpected event %s", ev.name)
		}
	}
	if state != "stopped" {
		t.Fatalf("stream ended in state %s", state)
	}
	cs := make([]any, len(content))
	for i, c := range content {
		cs[i] = c
	}
	msg["content"] = cs
	return msg
}

func TestStreamEqualsMessage(t *testing.T) {
	weather := toolDef("get_weather")
	cases := map[string]map[string]any{
		"text":      msgBody("tell me a long story about the sea, with ünïcödé"),
		"tool":      msgBody("weather in Paris? [tool]", "tools", []any{weather}),
		"forced":    msgBody("pick", "tools", []any{toolDef("a"), toolDef("b")}, "tool_choice", map[string]any{"type": "tool", "name": "b"}),
		"thinking":  msgBody("think hard", "thinking", map[string]any{"type": "enabled", "budget_tokens": 1024}, "max_tokens", 4000),
		"stop":      msgBody("one STOP two", "stop_sequences", []any{"STOP"}),
		"truncated": msgBody(strings.Repeat("long ", 50), "max_tokens", 10),
	}
	for name, body := range cases {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			r := e.do("POST", "/v1/messages", body)
			if r.status != 200 {
				t.Fatalf("%d %s", r.status, r.body)
			}
			want := r.json(t)
			body["stream"] = true
			sr := e.do("POST", "/v1/messages", body)
			if sr.status != 200 || !strings.HasPrefix(sr.header.Get("Content-Type"), "text/event-stream") {
				t.Fatalf("stream %d %s", sr.status, sr.header)
			}
			evs := parseSSE(t, sr.body)
			got := assemble(t, evs)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("assembled\n%v\nwant\n%v", got, want)
			}
			for _, ev := range evs {
				if ev.name == "content_block_delta" && ev.data["delta"].(map[string]any)["type"] == "input_json_delta" {
					// first piece of a tool input is empty
					if ev.data["delta"].(map[string]any)["partial_json"] != "" {
						t.Fatal("first input_json_delta not empty")
					}
					break
				}
			}
		})
	}
}

func TestReplyBehaviours(t *testing.T) {
	e := newEnv(t)
	post := func(body map[string]any) map[string]any {
		t.Helper()
		r := e.do("POST", "/v1/messages", body)
		if r.status != 200 {
			t.Fatalf("%d %s", r.status, r.body)
		}
		return r.json(t)
	}
	// tool use
	m := post(msgBody("find cats [tool]", "tools", []any{toolDef("search")}))
	c := m["content"].([]any)
	tu := c[len(c)-1].(map[string]any)
	if m["stop_reason"] != "tool_use" || tu["type"] != "tool_use" || tu["name"] != "search" ||
		!strings.HasPrefix(tu["id"].(string), "toolu_") || tu["input"].(map[string]any)["query"] != "find cats [tool]" {
		t.Fatalf("tool reply %v", m)
	}
	// no [tool], auto: plain text
	if m := post(msgBody("find cats", "tools", []any{toolDef("search")})); m["stop_reason"] != "end_turn" {
		t.Fatalf("auto without [tool]: %v", m)
	}
	// thinking first, with a signature
	m = post(msgBody("why", "thinking", map[string]any{"type": "adaptive"}))
	th := m["content"].([]any)[0].(map[string]any)
	if th["type"] != "thinking" || th["signature"] == "" {
		t.Fatalf("thinking %v", m)
	}
	// stop sequence
	m = post(msgBody("a STOP b", "stop_sequences", []any{"b", "STOP"}))
	if m["stop_reason"] != "stop_sequence" || m["stop_sequence"] != "STOP" ||
		m["content"].([]any)[0].(map[string]any)["text"] != "Answer to: a " {
		t.Fatalf("stop sequence %v", m)
	}
	// max_tokens truncation
	m = post(msgBody(strings.Repeat("x", 400), "max_tokens", 5))
	u := m["usage"].(map[string]any)
	if m["stop_reason"] != "max_tokens" || u["output_tokens"].(float64) != 5 {
		t.Fatalf("truncation %v", m)
	}
	body := mustJSON(t, msgBody(strings.Repeat("x", 400), "max_tokens", 5))
	if txt, _ := ReplyText(body); len(txt) != 19 {
		t.Fatalf("ReplyText of truncated reply %q", txt)
	}
	// pre-warm
	m = post(msgBody("warm", "max_tokens", 0))
	if m["stop_reason"] != "max_tokens" || len(m["content"].([]any)) != 0 {
		t.Fatalf("pre-warm %v", m)
	}
	// tool_result text counts as user text
	m = post(msgBody("", "messages", []any{
		map[string]any{"role": "user", "content": "q"},
		map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "toolu_1", "name": "s", "input": map[string]any{}}}},
		map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "tool_result", "tool_use_id": "toolu_1", "content": "42"},
			map[string]any{"type": "text", "text": "and?"},
		}},
	}))
	if got := m["content"].([]any)[0].(map[string]any)["text"]; got != "Answer to: 42\nand?" {
		t.Fatalf("tool_result reply %q", got)
	}
}

func TestDirectivesSync(t *testing.T) {
	e := newEnv(t)
	errType(t, e.do("POST", "/v1/messages", msgBody("x [error:overloaded_error]")), 529, "overloaded_error")
	errType(t, e.do("POST", "/v1/messages", msgBody("x [error:rate_limit_error]")), 429, "rate_limit_error")
	errType(t, e.do("POST", "/v1/messages", msgBody("x [error:permission_error]", "stream", true)), 403, "permission_error")
	if r := e.do("POST", "/v1/messages", msgBody("x [slow:3s]")); r.status != 200 {
		t.Fatal(r.status)
	}
	e.s.Latency = 250 * time.Millisecond
	e.do("POST", "/v1/messages", msgBody("y"))
	if slept := e.clock.Slept(); len(slept) != 2 || slept[0].String() != "3s" || slept[1].String() != "250ms" {
		t.Fatalf("slept %v", slept)
	}
	e.s.SyncLatency = func(model string, r *rand.Rand) time.Duration {
		return time.Duration(len(model))*time.Millisecond + time.Duration(r.IntN(3))*time.Microsecond
	}
	e.do("POST", "/v1/messages", msgBody("z"))
	e.do("POST", "/v1/messages", msgBody("z"))
	if slept := e.clock.Slept(); len(slept) != 4 || slept[2] != slept[3] || slept[2].Truncate(time.Millisecond) != time.Duration(len("claude-sonnet-4-6"))*time.Millisecond {
		t.Fatalf("with SyncLatency, slept %v", slept)
	}
}
