package proxy

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/sse"
)

// pieces cuts b into pieces whose sizes come from sizes, in turn (each
// size plus one); no sizes means one piece.
func pieces(b, sizes []byte) [][]byte {
	var out [][]byte
	for i := 0; len(b) > 0; i++ {
		n := len(b)
		if len(sizes) > 0 {
			n = min(n, int(sizes[i%len(sizes)])+1)
		}
		out = append(out, b[:n])
		b = b[n:]
	}
	return out
}

// tapResult is what a tap read.
type tapResult struct {
	model   string
	usage   llmfleet.Usage
	errType string
}

// FuzzJSONTap checks that the JSON tap reads the same whatever the pieces
// the body comes in, and, for a valid JSON object, what encoding/json reads
// in the members model, usage and error.
func FuzzJSONTap(f *testing.F) {
	f.Add([]byte(messageJSON), []byte{7, 13})
	f.Add([]byte(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_1"}`), []byte{0})
	f.Add([]byte(`{"mod\u0065l":"m","usage":{"input_tokens":1},"usage":null}`), []byte{3})
	f.Add([]byte(`[1,2,{"usage":{"input_tokens":1}}]`), []byte{})
	f.Add([]byte(`{"usage":{"input_tokens":`), []byte{1})
	f.Add([]byte(`{"model":"m\u00e9","usage":{"INPUT_TOKENS":3,"output_tokens":1.0,"cache_creation":{"ephemeral_5m_input_tokens":2},"server_tool_use":{"web_search_requests":1}}}`), []byte{5})
	f.Add([]byte(`{"usage":{"input_tokens":99999999999999999999,"output_tokens":-0,"cache_creation":null}}`), []byte{2})
	f.Fuzz(func(t *testing.T, body, sizes []byte) {
		var whole, cut jsonTap
		whole.write(body)
		for _, p := range pieces(body, sizes) {
			cut.write(p)
		}
		var w, c tapResult
		w.model, w.usage, w.errType = whole.result()
		c.model, c.usage, c.errType = cut.result()
		if w != c {
			t.Fatalf("%q: whole %+v, in pieces of %v %+v", body, w, sizes, c)
		}
		var a tapResult
		a.model, a.usage, a.errType = readAnswer(body)
		if a != w {
			t.Fatalf("%q: read whole %+v, tapped %+v", body, a, w)
		}
		var members map[string]json.RawMessage
		if json.Unmarshal(body, &members) != nil || members == nil {
			return
		}
		var want tapResult
		for _, v := range members {
			if len(v) >= maxKept {
				return // too large to be kept: the tap skips it
			}
		}
		if v, ok := members["model"]; ok {
			_ = json.Unmarshal(v, &want.model)
		}
		if v, ok := members["usage"]; ok {
			_ = json.Unmarshal(v, &want.usage)
		}
		if v, ok := members["error"]; ok {
			var e struct {
				Type string `json:"type"`
			}
			_ = json.Unmarshal(v, &e)
			want.errType = e.Type
		}
		if w != want {
			t.Fatalf("%q: tap %+v, encoding/json %+v", body, w, want)
		}
	})
}

// FuzzSSETap checks that the event-stream tap reads the same whatever the
// pieces the stream comes in, and what the events read by sse.Reader say.
func FuzzSSETap(f *testing.F) {
	f.Add([]byte(stream), []byte{4, 10})
	f.Add([]byte(stream[:len(stream)/2]), []byte{0})
	f.Add([]byte("event: error\r\ndata: {\"type\": \"error\", \"error\": {\"type\": \"overloaded_error\"}}\r\n\r\n"), []byte{2})
	f.Add([]byte("data: {\"type\":\"message_start\",\"message\":{\"model\":\"m\",\"usage\":{\"input_tokens\":1}}}\n\n"), []byte{})
	f.Fuzz(func(t *testing.T, in, sizes []byte) {
		var whole, cut sseTap
		whole.write(in)
		for _, p := range pieces(in, sizes) {
			cut.write(p)
		}
		w := tapResult{whole.model, whole.usage, whole.errType}
		c := tapResult{cut.model, cut.usage, cut.errType}
		if w != c {
			t.Fatalf("%q: whole %+v, in pieces of %v %+v", in, w, sizes, c)
		}
		var ref sseTap
		rd := sse.NewReader(bytes.NewReader(in))
		for {
			ev, err := rd.Next()
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if keptEvent(ev.Name) && len(ev.Data) <= maxKept {
				ref.event(ev)
			}
		}
		if want := (tapResult{ref.model, ref.usage, ref.errType}); w != want {
			t.Fatalf("%q: tap %+v, events read by sse.Reader %+v", in, w, want)
		}
	})
}
