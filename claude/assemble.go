package claude

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// assembler reassembles the Message a Messages stream carries from its
// events, in their order: it owns the message (from message_start, with
// message_delta merged in), its content blocks by index, and each block's
// tool input JSON as it comes in pieces.
type assembler struct {
	msg     map[string]any
	blocks  []map[string]any
	partial []strings.Builder
}

// add folds one event, of type typ and data d, into the message; events
// of other types (ping) are let by.
func (a *assembler) add(typ string, d map[string]any) error {
	switch typ {
	case "message_start":
		m, ok := d["message"].(map[string]any)
		if !ok {
			return errors.New("claude: message_start without a message")
		}
		a.msg = m
	case "content_block_start":
		return a.startBlock(d)
	case "content_block_delta":
		i, ok := index(d, len(a.blocks))
		delta, isObj := d["delta"].(map[string]any)
		if !ok || !isObj || a.blocks[i] == nil {
			return errors.New("claude: content_block_delta without its block")
		}
		applyDelta(a.blocks[i], &a.partial[i], delta)
	case "content_block_stop":
		return a.stopBlock(d)
	case "message_delta":
		return a.messageDelta(d)
	}
	return nil
}

// startBlock opens the block a content_block_start names.
func (a *assembler) startBlock(d map[string]any) error {
	i, ok := index(d, 1<<16)
	b, isObj := d["content_block"].(map[string]any)
	if !ok || !isObj {
		return errors.New("claude: bad content_block_start")
	}
	for len(a.blocks) <= i {
		a.blocks = append(a.blocks, nil)
		a.partial = append(a.partial, strings.Builder{})
	}
	a.blocks[i] = b
	return nil
}

// stopBlock closes the block a content_block_stop names, parsing the tool
// input its pieces made.
func (a *assembler) stopBlock(d map[string]any) error {
	i, ok := index(d, len(a.blocks))
	if !ok || a.blocks[i] == nil {
		return errors.New("claude: content_block_stop without its block")
	}
	if s := a.partial[i].String(); s != "" {
		var input any
		dec := json.NewDecoder(strings.NewReader(s))
		dec.UseNumber()
		if err := dec.Decode(&input); err != nil {
			return fmt.Errorf("claude: block %d: tool input: %w", i, err)
		}
		a.blocks[i]["input"] = input
	}
	return nil
}

// messageDelta merges a message_delta's fields and its usage (but its
// null members) into the message.
func (a *assembler) messageDelta(d map[string]any) error {
	if a.msg == nil {
		return errors.New("claude: message_delta before message_start")
	}
	if delta, ok := d["delta"].(map[string]any); ok {
		for k, v := range delta {
			a.msg[k] = v
		}
	}
	if u, ok := d["usage"].(map[string]any); ok {
		mu, _ := a.msg["usage"].(map[string]any)
		if mu == nil {
			mu = map[string]any{}
		}
		for k, v := range u {
			if v != nil {
				mu[k] = v
			}
		}
		a.msg["usage"] = mu
	}
	return nil
}

// message returns the whole message at message_stop, its content the
// blocks that started, in index order.
func (a *assembler) message() (json.RawMessage, error) {
	if a.msg == nil {
		return nil, errors.New("claude: message_stop before message_start")
	}
	content := make([]any, 0, len(a.blocks))
	for _, b := range a.blocks {
		if b != nil {
			content = append(content, b)
		}
	}
	a.msg["content"] = content
	return json.Marshal(a.msg)
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
