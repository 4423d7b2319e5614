package emulator

import (
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"unicode/utf8"

	"github.com/llmfleet/llmfleet/sse"
)

// sseEvent is one server-sent event.
type sseEvent struct {
	name string
	data any
}

// Stream event payloads, with "type" first as the API sends it.
type (
	evType struct {
		Type string `json:"type"`
	}
	evMessageStart struct {
		Type    string      `json:"type"`
		Message messageJSON `json:"message"`
	}
	evBlockStart struct {
		Type         string `json:"type"`
		Index        int    `json:"index"`
		ContentBlock block  `json:"content_block"`
	}
	evBlockDelta struct {
		Type  string `json:"type"`
		Index int    `json:"index"`
		Delta any    `json:"delta"`
	}
	evBlockStop struct {
		Type  string `json:"type"`
		Index int    `json:"index"`
	}
	evMessageDelta struct {
		Type  string         `json:"type"`
		Delta evStop         `json:"delta"`
		Usage evMessageUsage `json:"usage"`
	}
	evStop struct {
		StopReason   *string         `json:"stop_reason"`
		StopSequence *string         `json:"stop_sequence"`
		StopDetails  json.RawMessage `json:"stop_details"`
	}
	evMessageUsage struct {
		InputTokens              int64 `json:"input_tokens"`
		CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
		OutputTokens             int64 `json:"output_tokens"`
	}
	textDelta struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	thinkingDelta struct {
		Type     string `json:"type"`
		Thinking string `json:"thinking"`
	}
	signatureDelta struct {
		Type      string `json:"type"`
		Signature string `json:"signature"`
	}
	jsonDelta struct {
		Type        string `json:"type"`
		PartialJSON string `json:"partial_json"`
	}
	evError struct {
		Type      string    `json:"type"`
		Error     errorJSON `json:"error"`
		RequestID string    `json:"request_id"`
	}
)

// streamEvents returns the SSE events that deliver msg, in the order of the
// real API: message_start, each block's start/deltas/stop, message_delta,
// message_stop, with ping events at random (but deterministic) points.
func (s *Server) streamEvents(msg messageJSON) []sseEvent {
	r := s.rng("stream", msg.ID)
	var evs []sseEvent
	ping := func() {
		if r.IntN(8) == 0 {
			evs = append(evs, sseEvent{"ping", evType{"ping"}})
		}
	}
	start := msg
	start.Content = []block{}
	start.StopReason = nil
	start.StopSequence = nil
	start.Usage.OutputTokens = min(1, msg.Usage.OutputTokens)
	evs = append(evs, sseEvent{"message_start", evMessageStart{"message_start", start}})
	evs = append(evs, sseEvent{"ping", evType{"ping"}})
	delta := func(i int, d any) {
		evs = append(evs, sseEvent{"content_block_delta", evBlockDelta{"content_block_delta", i, d}})
		ping()
	}
	for i, b := range msg.Content {
		first := block{Type: b.Type}
		if b.Type == "tool_use" {
			first.ID, first.Name, first.Input = b.ID, b.Name, json.RawMessage("{}")
		}
		evs = append(evs, sseEvent{"content_block_start", evBlockStart{"content_block_start", i, first}})
		ping()
		switch b.Type {
		case "text":
			for _, piece := range split(r, b.Text, 12) {
				delta(i, textDelta{"text_delta", piece})
			}
		case "thinking":
			for _, piece := range split(r, b.Thinking, 24) {
				delta(i, thinkingDelta{"thinking_delta", piece})
			}
			delta(i, signatureDelta{"signature_delta", b.Signature})
		case "tool_use":
			delta(i, jsonDelta{"input_json_delta", ""})
			for _, piece := range split(r, string(b.Input), 10) {
				delta(i, jsonDelta{"input_json_delta", piece})
			}
		}
		evs = append(evs, sseEvent{"content_block_stop", evBlockStop{"content_block_stop", i}})
		ping()
	}
	u := msg.Usage
	evs = append(evs, sseEvent{"message_delta", evMessageDelta{
		Type:  "message_delta",
		Delta: evStop{msg.StopReason, msg.StopSequence, jsonNull},
		Usage: evMessageUsage{u.InputTokens, u.CacheCreationInputTokens, u.CacheReadInputTokens, u.OutputTokens},
	}})
	evs = append(evs, sseEvent{"message_stop", evType{"message_stop"}})
	return evs
}

// split cuts s into pieces of 1 to maxLen bytes at random points, never
// inside a UTF-8 sequence. The empty string gives no pieces.
func split(r *rand.Rand, s string, maxLen int) []string {
	var out []string
	for len(s) > 0 {
		n := 1 + r.IntN(maxLen)
		if n >= len(s) {
			out = append(out, s)
			break
		}
		for n < len(s) && !utf8.RuneStart(s[n]) {
			n++
		}
		out = append(out, s[:n])
		s = s[n:]
	}
	return out
}

// writeStream answers a streaming request with the events of msg. A fault
// f (from Fault.StreamError) replaces the rest of the stream with an error
// event after f.StreamErrorAfter events.
func (s *Server) writeStream(c *call, p *params, msg messageJSON, f *Fault) {
	evs := s.streamEvents(msg)
	if f != nil {
		n := max(f.StreamErrorAfter, 1)
		if n < len(evs) {
			typ := f.ErrorType
			if typ == "" {
				typ = "overloaded_error"
			}
			m := f.Message
			if m == "" {
				m = defaultMessage(typ)
			}
			evs = append(evs[:n:n], sseEvent{"error", evError{"error",
				errorJSON{Type: typ, Message: m}, c.id}})
		}
	}
	h := c.w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	c.w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(c.w)
	for _, ev := range evs {
		b, err := json.Marshal(ev.data)
		if err != nil {
			panic(err)
		}
		if _, err := c.w.Write(sse.AppendEvent(nil, ev.name, b)); err != nil {
			return
		}
		rc.Flush()
	}
}
