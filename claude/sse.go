package claude

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

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
	var msg map[string]any
	var blocks []map[string]any
	var partial []strings.Builder
	for {
		ev, err := er.Next()
		if err == io.EOF {
			return nil, fmt.Errorf("claude: stream ended before message_stop: %w", io.ErrUnexpectedEOF)
		}
		if err != nil {
			return nil, err
		}
		var d map[string]any
		dec := json.NewDecoder(bytes.NewReader(ev.Data))
		dec.UseNumber()
		if err := dec.Decode(&d); err != nil {
			return nil, fmt.Errorf("claude: event %s: %w", ev.Name, err)
		}
		typ := ev.Name
		if typ == "" { // no event field: the data's type names the event
			typ, _ = d["type"].(string)
		}
		switch typ {
		case "message_start":
			m, ok := d["message"].(map[string]any)
			if !ok {
				return nil, errors.New("claude: message_start without a message")
			}
			msg = m
		case "content_block_start":
			i, ok := index(d, 1<<16)
			b, isObj := d["content_block"].(map[string]any)
			if !ok || !isObj {
				return nil, errors.New("claude: bad content_block_start")
			}
			for len(blocks) <= i {
				blocks = append(blocks, nil)
				partial = append(partial, strings.Builder{})
			}
			blocks[i] = b
		case "content_block_delta":
			i, ok := index(d, len(blocks))
			delta, isObj := d["delta"].(map[string]any)
			if !ok || !isObj || blocks[i] == nil {
				return nil, errors.New("claude: content_block_delta without its block")
			}
			applyDelta(blocks[i], &partial[i], delta)
		case "content_block_stop":
			i, ok := index(d, len(blocks))
			if !ok || blocks[i] == nil {
				return nil, errors.New("claude: content_block_stop without its block")
			}
			if s := partial[i].String(); s != "" {
				var input any
				dec := json.NewDecoder(strings.NewReader(s))
				dec.UseNumber()
				if err := dec.Decode(&input); err != nil {
					return nil, fmt.Errorf("claude: block %d: tool input: %w", i, err)
				}
				blocks[i]["input"] = input
			}
		case "message_delta":
			if msg == nil {
				return nil, errors.New("claude: message_delta before message_start")
			}
			if delta, ok := d["delta"].(map[string]any); ok {
				for k, v := range delta {
					msg[k] = v
				}
			}
			if u, ok := d["usage"].(map[string]any); ok {
				mu, _ := msg["usage"].(map[string]any)
				if mu == nil {
					mu = map[string]any{}
				}
				for k, v := range u {
					if v != nil {
						mu[k] = v
					}
				}
				msg["usage"] = mu
			}
		case "message_stop":
			if msg == nil {
				return nil, errors.New("claude: message_stop before message_start")
			}
			content := make([]any, 0, len(blocks))
			for _, b := range blocks {
				if b != nil {
					content = append(content, b)
				}
			}
			msg["content"] = content
			return json.Marshal(msg)
		case "error":
			return nil, resultError(ev.Data)
		}
	}
}

// index returns the event's "index", if it is below n.
func index(d map[string]any, n int) (int, bool) {
	num, ok := d["index"].(json.Number)
	if !ok {
		return 0, false
	}
	i, err := num.Int64()
	if err != nil || i < 0 || int(i) >= n {
		return 0, false
	}
	return int(i), true
}

// applyDelta folds one content_block_delta into its block.
func applyDelta(b map[string]any, partial *strings.Builder, delta map[string]any) {
	appendStr := func(key string, v any) {
		s, _ := v.(string)
		old, _ := b[key].(string)
		b[key] = old + s
	}
	switch delta["type"] {
	case "text_delta":
		appendStr("text", delta["text"])
	case "thinking_delta":
		appendStr("thinking", delta["thinking"])
	case "signature_delta":
		b["signature"] = delta["signature"]
	case "input_json_delta":
		s, _ := delta["partial_json"].(string)
		partial.WriteString(s)
	case "citations_delta":
		old, _ := b["citations"].([]any)
		b["citations"] = append(old, delta["citation"])
	}
}
