package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"

	"github.com/llmfleet/llmfleet/jsonmember"
	"github.com/llmfleet/llmfleet/sse"
)

// This file synthesises the server-sent-event stream of the Messages API
// from a finished Message. The proxy and the SDK middleware both answer a
// batched streaming request with it.

// pingEvent is the keep-alive event, byte for byte as the API sends it.
var pingEvent = string(sse.AppendEvent(nil, "ping", []byte(`{"type": "ping"}`)))

// deltaUsageKeys are the usage counts that message_delta repeats, as
// cumulative totals, after the stream's content.
var deltaUsageKeys = map[string]bool{
	"input_tokens":                true,
	"cache_creation_input_tokens": true,
	"cache_read_input_tokens":     true,
	"output_tokens":               true,
	"server_tool_use":             true,
	"output_tokens_details":       true,
}

// writeErrorEvent writes the error event of a stream that has begun.
func writeErrorEvent(w io.Writer, envelope []byte) error {
	_, err := w.Write(sse.AppendEvent(nil, "error", compactJSON(envelope)))
	return err
}

// writeMessageEvents writes the events of a stream that produces msg, a
// Message object: message_start; for each content block its
// content_block_start, deltas and content_block_stop; message_delta with
// the stop reason and cumulative usage; message_stop. Fields of msg that it
// does not know are carried in message_start or in the blocks' start events
// unchanged, so that a client accumulating the stream rebuilds msg.
func writeMessageEvents(w io.Writer, msg []byte) error {
	msg = compactJSON(msg)
	if !json.Valid(msg) {
		return errors.New("proxy: batch result is not valid JSON")
	}
	ms, err := jsonmember.Members(msg)
	if err != nil {
		return err
	}
	var blocks [][]byte
	if m, ok := jsonmember.Find(ms, "content"); ok && !bytes.Equal(m.Value(msg), []byte("null")) {
		if blocks, err = jsonmember.Elements(m.Value(msg)); err != nil {
			return err
		}
	}
	usage, usageMs := []byte(nil), []jsonmember.Member(nil)
	if m, ok := jsonmember.Find(ms, "usage"); ok {
		usage = m.Value(msg)
		usageMs, _ = jsonmember.Members(usage) // null or malformed usage is passed on as is
	}

	buf := make([]byte, 0, 2*len(msg)+512)

	// message_start: the message before any content, with the usage known
	// at the start (everything but most of the output tokens).
	start := jsonmember.Replace(msg, ms,
		edit("content", []byte("[]")),
		edit("stop_reason", []byte("null")),
		edit("stop_sequence", []byte("null")),
		edit("stop_details", []byte("null")),
		edit("usage", jsonmember.Replace(usage, usageMs, edit("output_tokens", startOutputTokens(usage, usageMs)))),
	)
	buf = sse.AppendEvent(buf, "message_start", []byte(`{"type":"message_start","message":`), start, []byte("}"))

	for i, b := range blocks {
		buf, err = appendBlockEvents(buf, i, b)
		if err != nil {
			return err
		}
	}

	// message_delta: the stop fields and the cumulative usage.
	buf = sse.AppendEvent(buf, "message_delta",
		[]byte(`{"type":"message_delta","delta":{"stop_reason":`), valueOr(msg, ms, "stop_reason"),
		[]byte(`,"stop_sequence":`), valueOr(msg, ms, "stop_sequence"),
		[]byte(`,"stop_details":`), valueOr(msg, ms, "stop_details"),
		containerMember(msg, ms),
		[]byte(`},"usage":`), deltaUsage(usage, usageMs), []byte("}"))
	buf = sse.AppendEvent(buf, "message_stop", []byte(`{"type":"message_stop"}`))
	_, err = w.Write(buf)
	return err
}

// appendBlockEvents appends the start, delta and stop events of the content
// block at index i.
func appendBlockEvents(buf []byte, i int, block []byte) ([]byte, error) {
	ms, err := jsonmember.Members(block)
	if err != nil {
		return nil, err
	}
	idx := []byte(strconv.Itoa(i))
	var typ string
	if m, ok := jsonmember.Find(ms, "type"); ok {
		json.Unmarshal(m.Value(block), &typ)
	}
	startBlock := block
	var deltas [][]byte // the delta objects, in order
	switch typ {
	case "text":
		edits := []jsonmember.Edit{edit("text", []byte(`""`))}
		if m, ok := jsonmember.Find(ms, "citations"); ok && m.Value(block)[0] == '[' {
			cites, err := jsonmember.Elements(m.Value(block))
			if err != nil {
				return nil, err
			}
			if len(cites) > 0 {
				edits = append(edits, edit("citations", []byte("[]")))
			}
			for _, c := range cites {
				deltas = append(deltas, concat(`{"type":"citations_delta","citation":`, c, `}`))
			}
		}
		startBlock = jsonmember.Replace(block, ms, edits...)
		deltas = append(deltas, concat(`{"type":"text_delta","text":`, valueOrEmpty(block, ms, "text"), `}`))
	case "tool_use", "server_tool_use", "mcp_tool_use":
		startBlock = jsonmember.Replace(block, ms, edit("input", []byte("{}")))
		deltas = append(deltas, []byte(`{"type":"input_json_delta","partial_json":""}`))
		if m, ok := jsonmember.Find(ms, "input"); ok {
			deltas = append(deltas, concat(`{"type":"input_json_delta","partial_json":`, jsonString(string(m.Value(block))), `}`))
		}
	case "thinking":
		startBlock = jsonmember.Replace(block, ms, edit("thinking", []byte(`""`)), edit("signature", []byte(`""`)))
		if v := valueOrEmpty(block, ms, "thinking"); !bytes.Equal(v, []byte(`""`)) {
			deltas = append(deltas, concat(`{"type":"thinking_delta","thinking":`, v, `}`))
		}
		if v := valueOrEmpty(block, ms, "signature"); !bytes.Equal(v, []byte(`""`)) {
			deltas = append(deltas, concat(`{"type":"signature_delta","signature":`, v, `}`))
		}
	}
	buf = sse.AppendEvent(buf, "content_block_start",
		[]byte(`{"type":"content_block_start","index":`), idx, []byte(`,"content_block":`), startBlock, []byte("}"))
	for _, d := range deltas {
		buf = sse.AppendEvent(buf, "content_block_delta",
			[]byte(`{"type":"content_block_delta","index":`), idx, []byte(`,"delta":`), d, []byte("}"))
	}
	buf = sse.AppendEvent(buf, "content_block_stop", []byte(`{"type":"content_block_stop","index":`), idx, []byte("}"))
	return buf, nil
}

// startOutputTokens is the output count message_start reports: the API
// reports the few tokens produced when the stream begins, at most 1 here.
func startOutputTokens(usage []byte, ms []jsonmember.Member) []byte {
	m, ok := jsonmember.Find(ms, "output_tokens")
	if !ok {
		return nil
	}
	var n int64
	if json.Unmarshal(m.Value(usage), &n) == nil && n > 1 {
		return []byte("1")
	}
	return m.Value(usage)
}

// deltaUsage returns the usage object of message_delta: the cumulative
// counts of usage that the API repeats there.
func deltaUsage(usage []byte, ms []jsonmember.Member) []byte {
	out := []byte("{")
	seenOutput := false
	for _, m := range ms {
		if !deltaUsageKeys[m.Key] {
			continue
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(out, m.Text(usage)...)
		seenOutput = seenOutput || m.Key == "output_tokens"
	}
	if !seenOutput {
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(out, `"output_tokens":0`...)
	}
	return append(out, '}')
}

// valueOr returns the value of member key of obj, or null.
func valueOr(obj []byte, ms []jsonmember.Member, key string) []byte {
	if m, ok := jsonmember.Find(ms, key); ok {
		return m.Value(obj)
	}
	return []byte("null")
}

// containerMember returns the message's container as a member of
// message_delta's delta (`,"container":…`), or nothing when the message
// has none: the API sends no container member unless a tool made one.
func containerMember(obj []byte, ms []jsonmember.Member) []byte {
	m, ok := jsonmember.Find(ms, "container")
	if !ok {
		return nil
	}
	return append([]byte(`,"container":`), m.Value(obj)...)
}

// valueOrEmpty returns the value of member key of obj, or "".
func valueOrEmpty(obj []byte, ms []jsonmember.Member, key string) []byte {
	if m, ok := jsonmember.Find(ms, key); ok && m.Value(obj)[0] == '"' {
		return m.Value(obj)
	}
	return []byte(`""`)
}

func concat(a string, b []byte, c string) []byte {
	out := make([]byte, 0, len(a)+len(b)+len(c))
	return append(append(append(out, a...), b...), c...)
}

// edit is the replacement of the value of member key by value.
func edit(key string, value []byte) jsonmember.Edit { return jsonmember.Edit{Key: key, Value: value} }
