package claude

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/llmfleet/llmfleet/sse"
)

// ReadMessage reads a whole Messages stream from r and reassembles the
// Message object it carries, as the non-streaming call would have answered
// it: text, thinking, signature and citation deltas are joined, tool inputs
// are parsed from their JSON pieces, and message_delta's fields and usage are
// merged in. An "error" event is returned as an *llmfleet.Error; a stream
// that ends before message_stop gives io.ErrUnexpectedEOF.
func ReadMessage(r io.Reader) (json.RawMessage, error) {
	er := sse.NewReader(r)
	var a assembler
	for {
		ev, err := er.Next()
		if err == io.EOF {
			return nil, fmt.Errorf("claude: stream ended before message_stop: %w", io.ErrUnexpectedEOF)
		}
		if err != nil {
			return nil, err
		}
		typ, d, err := decodeEvent(ev)
		if err != nil {
			return nil, err
		}
		switch typ {
		case "message_stop":
			return a.message()
		case "error":
			return nil, resultError(ev.Data)
		}
		if err := a.add(typ, d); err != nil {
			return nil, err
		}
	}
}

// decodeEvent returns an event's type and its data decoded (numbers kept
// as json.Number); an event without an event field is named by its
// data's type.
func decodeEvent(ev sse.Event) (string, map[string]any, error) {
	var d map[string]any
	dec := json.NewDecoder(bytes.NewReader(ev.Data))
	dec.UseNumber()
	if err := dec.Decode(&d); err != nil {
		return "", nil, fmt.Errorf("claude: event %s: %w", ev.Name, err)
	}
	typ := ev.Name
	if typ == "" { // no event field: the data's type names the event
		typ, _ = d["type"].(string)
	}
	return typ, d, nil
}
