package proxy

import (
	"io"
	"strings"
	"testing"

	"github.com/llmfleet/llmfleet"
)

func scanJSON(pieces ...string) (string, llmfleet.Usage, string) {
	var j jsonTap
	for _, p := range pieces {
		j.write([]byte(p))
	}
	return j.result()
}

func scanSSE(pieces ...string) *sseTap {
	var s sseTap
	for _, p := range pieces {
		s.write([]byte(p))
	}
	return &s
}

// cuts returns s cut at i and j.
func cuts(s string, i, j int) []string { return []string{s[:i], s[i:j], s[j:]} }

func bytesOf(s string) []string {
	out := make([]string, len(s))
	for i := range s {
		out[i] = s[i : i+1]
	}
	return out
}

const messageJSON = `{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-6",
 "content":[{"type":"text","text":"a \"usage\": {\"input_tokens\": 999} and \\\"model\\\":\"x\""},
  {"type":"tool_use","id":"toolu_1","name":"t","input":{"usage":{"input_tokens":5},"model":"nested","error":{"type":"no"}}}],
 "stop_reason":"end_turn","stop_sequence":null,
 "usage" : {"input_tokens":12,"cache_creation_input_tokens":30,"cache_read_input_tokens":40,
  "cache_creation":{"ephemeral_5m_input_tokens":10,"ephemeral_1h_input_tokens":20},"output_tokens":7,"service_tier":"standard"}
}`

func wantMessageUsage() llmfleet.Usage {
	var u llmfleet.Usage
	u.InputTokens, u.OutputTokens, u.CacheCreationInputTokens, u.CacheReadInputTokens = 12, 7, 30, 40
	u.CacheCreation.Ephemeral5mInputTokens, u.CacheCreation.Ephemeral1hInputTokens = 10, 20
	return u
}

func TestJSONTapMessage(t *testing.T) {
	want := wantMessageUsage()
	check := func(name string, pieces []string) {
		t.Helper()
		model, u, errType := scanJSON(pieces...)
		if model != "claude-sonnet-4-6" || u != want || errType != "" {
			t.Fatalf("%s: got %q %+v %q", name, model, u, errType)
		}
	}
	check("whole", []string{messageJSON})
	check("bytes", bytesOf(messageJSON))
	for i := 0; i < len(messageJSON); i += 7 {
		check("cut", cuts(messageJSON, i, min(len(messageJSON), i+13)))
	}
}

func TestJSONTapErrorEnvelope(t *testing.T) {
	env := `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_1"}`
	for i := range env {
		model, u, errType := scanJSON(env[:i], env[i:])
		if model != "" || u != (llmfleet.Usage{}) || errType != "overloaded_error" {
			t.Fatalf("cut %d: %q %+v %q", i, model, u, errType)
		}
	}
	// Not an object, or truncated: nothing is found, nothing panics.
	for _, s := range []string{`[1,2,{"usage":{"input_tokens":1}}]`, `{"usage":{"input_tokens":`, ``, `"x"`, `}}}`} {
		if _, u, _ := scanJSON(s); u != (llmfleet.Usage{}) {
			t.Fatalf("%s: usage %+v", s, u)
		}
	}
}

const stream = "event: message_start\n" +
	`data: {"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","model":"claude-haiku-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":3,"cache_creation_input_tokens":30,"cache_read_input_tokens":0,"cache_creation":{"ephemeral_5m_input_tokens":10,"ephemeral_1h_input_tokens":20},"output_tokens":1}}}` + "\n\n" +
	"event: ping\ndata: {\"type\": \"ping\"}\n\n" +
	"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"event: message_delta\\ndata: {\\\"usage\\\":{\\\"output_tokens\\\":1000}}\"}}\n\n" +
	": a comment\n" +
	"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
	"event: message_delta\n" +
	`data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":9,"input_tokens":null,"cache_read_input_tokens":5}}` + "\n\n" +
	"event: message_delta\n" +
	`data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":15}}` + "\n\n" +
	"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"

func TestSSETapUsage(t *testing.T) {
	var want llmfleet.Usage
	want.InputTokens, want.OutputTokens, want.CacheCreationInputTokens, want.CacheReadInputTokens = 3, 15, 30, 5
	want.CacheCreation.Ephemeral5mInputTokens, want.CacheCreation.Ephemeral1hInputTokens = 10, 20
	check := func(name string, s *sseTap) {
		t.Helper()
		if s.model != "claude-haiku-4-5" || s.usage != want || s.errType != "" {
			t.Fatalf("%s: got %q %+v %q", name, s.model, s.usage, s.errType)
		}
	}
	check("whole", scanSSE(stream))
	check("bytes", scanSSE(bytesOf(stream)...))
	crlf := strings.ReplaceAll(stream, "\n", "\r\n")
	check("crlf", scanSSE(crlf))
	for i := 0; i < len(stream); i += 5 {
		check("cut", scanSSE(cuts(stream, i, min(len(stream), i+11))...))
		check("cut crlf", scanSSE(cuts(crlf, i, min(len(crlf), i+3))...))
	}
}

func TestSSETapErrorEvent(t *testing.T) {
	s := stream[:strings.Index(stream, "\nevent: message_delta\n")+1] +
		"event: error\ndata: {\"type\": \"error\", \"error\": {\"type\": \"overloaded_error\", \"message\": \"Overloaded\"}}\n\n"
	got := scanSSE(s)
	if got.errType != "overloaded_error" || got.model != "claude-haiku-4-5" || got.usage.InputTokens != 3 {
		t.Fatalf("got %+v", got)
	}
}

// BenchmarkUsageScan measures the scanners on a 100 KB answer.
func BenchmarkUsageScan(b *testing.B) {
	text := strings.Repeat(`lorem \"ipsum\" {dolor} `, 4000)
	msg := []byte(`{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"` + text +
		`"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}`)
	var sse []byte
	for i := 0; i < 4000; i++ {
		sse = append(sse, `event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"lorem \"ipsum\" {dolor} "}}

`...)
	}
	b.Run("json", func(b *testing.B) {
		b.SetBytes(int64(len(msg)))
		for b.Loop() {
			var j jsonTap
			for p := msg; len(p) > 0; p = p[min(len(p), 32<<10):] {
				j.write(p[:min(len(p), 32<<10)])
			}
		}
	})
	b.Run("sse", func(b *testing.B) {
		b.SetBytes(int64(len(sse)))
		for b.Loop() {
			var s sseTap
			for p := sse; len(p) > 0; p = p[min(len(p), 32<<10):] {
				s.write(p[:min(len(p), 32<<10)])
			}
		}
	})
}

// BenchmarkUsageScanSmall measures the reads of a short answer, the
// common case of the sync route: the JSON scanner fed the answer (as an
// answer too long to be kept is read) and the read of the whole answer
// kept (readAnswer).
func BenchmarkUsageScanSmall(b *testing.B) {
	msg := []byte(`{"id":"msg_01","type":"message","role":"assistant","model":"claude-haiku-4-5","content":[{"type":"text","text":"Answer to: hi"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":4,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":0},"service_tier":"standard"}}`)
	b.Run("tap", func(b *testing.B) {
		b.SetBytes(int64(len(msg)))
		for b.Loop() {
			var j jsonTap
			j.write(msg)
			j.result()
		}
	})
	b.Run("whole", func(b *testing.B) {
		b.SetBytes(int64(len(msg)))
		for b.Loop() {
			readAnswer(msg)
		}
	})
}

// A JSON answer is kept while the caller waits and scanned once it went
// out; past maxDeferredScan it is scanned as it comes. Either way the
// usage is read.
func TestUsageTapDeferredScan(t *testing.T) {
	for _, size := range []int{10, maxDeferredScan - 200, maxDeferredScan + 1000, 3 * maxDeferredScan} {
		body := `{"model":"claude-x","content":[{"type":"text","text":"` + strings.Repeat("a", size) +
			`"}],"usage":{"input_tokens":7,"output_tokens":9}}`
		tap := &usageTap{call: &syncCall{held: true}, rc: io.NopCloser(strings.NewReader(body))}
		buf := make([]byte, 1000)
		for {
			if _, err := tap.Read(buf); err != nil {
				break
			}
		}
		if inline := len(body) > maxDeferredScan; tap.inline != inline {
			t.Errorf("size %d: scanned inline %v, want %v", size, tap.inline, inline)
		}
		model, u, _ := tap.answer()
		if model != "claude-x" || u.InputTokens != 7 || u.OutputTokens != 9 {
			t.Errorf("size %d: model %q, usage %+v", size, model, u)
		}
	}
}
