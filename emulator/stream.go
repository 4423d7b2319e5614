package emulator

import (
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"unicode/utf8"
)

// sseEvent is one server-sent event.
type sseEvent struct {
	name string
	data any
}

// streamEvents returns the SSE events that deliver msg, in the order of the
// real API: message_start, each block's start/deltas/stop, message_delta,
// message_stop, with ping events at random (but deterministic) points.
func (s *Server) streamEvents(msg messageJSON) []sseEvent {
	r := s.rng("stream", msg.ID)
	var evs []sseEvent
	ping := func() {
		if r.IntN(8) == 0 {
			evs = append(evs, sseEvent{"ping", map[string]string{"type": "ping"}})
		}
	}
	start := msg
	start.Content = []block{}
	start.StopReason = nil
	start.StopSequence = nil
	start.Usage.OutputTokens = min(1, msg.Usage.OutputTokens)
	evs = append(evs, sseEvent{"message_start", map[string]any{"type": "message_start", "message": start}})
	evs = append(evs, sseEvent{"ping", map[string]string{"type": "ping"}})
	delta := func(i int, d any) {
		evs = append(evs, sseEvent{"content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": d}})
		ping()
	}
	for i, b := range msg.Content {
		var first block
		first.Type = b.Type
		if b.Type == "tool_use" {
			first.ID, first.Name, first.Input = b.ID, b.Name, json.RawMessage("{}")
		}
		evs = append(evs, sseEvent{"content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": first}})
		ping()
		switch b.Type {
		case "text":
			for _, piece := range split(r, b.Text, 12) {
				delta(i, map[string]string{"type": "text_delta", "text": piece})
			}
		case "thinking":
			for _, piece := range split(r, b.Thinking, 24) {
				delta(i, map[string]string{"type": "thinking_delta", "thinking": piece})
			}
			delta(i, map[string]string{"type": "signature_delta", "signature": b.Signature})
		case "tool_use":
			delta(i, map[string]string{"type": "input_json_delta", "partial_json": ""})
			for _, piece := range split(r, string(b.Input), 10) {
				delta(i, map[string]string{"type": "input_json_delta", "partial_json": piece})
			}
		}
		evs = append(evs, sseEvent{"content_block_stop", map[string]any{"type": "content_block_stop", "index": i}})
		ping()
	}
	u := msg.Usage
	evs = append(evs, sseEvent{"message_delta", map[string]any{
		"type": "message_delta",
		"delta": map[string]any{"stop_reason": msg.StopReason, "stop_sequence": msg.StopSequence,
			"stop_details": nil, "container": nil},
		"usage": map[string]int64{"input_tokens": u.InputTokens, "cache_creation_input_tokens": u.CacheCreationInputTokens,
			"cache_read_input_tokens": u.CacheReadInputTokens, "output_tokens": u.OutputTokens},
	}})
	evs = append(evs, sseEvent{"message_stop", map[string]string{"type": "message_stop"}})
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
			evs = append(evs[:n:n], sseEvent{"error", map[string]any{"type": "error",
				"error": map[string]string{"type": typ, "message": m}, "request_id": c.id}})
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
		if _, err := c.w.Write([]byte("event: " + ev.name + "\ndata: " + string(b) + "\n\n")); err != nil {
			return
		}
		rc.Flush()
	}
}
