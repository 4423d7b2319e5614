package emulator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

func (p *params) parseMessages(v json.RawMessage) *apiError {
	if v == nil || isNull(v) {
		return invalid("messages: Field required")
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(v, &raw); err != nil {
		return invalid("messages: Input should be a valid list")
	}
	if len(raw) == 0 {
		return invalid("messages: List should have at least 1 item after validation, not 0")
	}
	if len(raw) > 100000 {
		return invalid("messages: List should have at most 100000 items")
	}
	for i, r := range raw {
		var mm struct {
			Role    *string         `json:"role"`
			Content json.RawMessage `json:"content"`
		}
		if err := json.Unmarshal(r, &mm); err != nil {
			return invalid("messages.%d: Input should be a valid dictionary", i)
		}
		if mm.Role == nil {
			return invalid("messages.%d.role: Field required", i)
		}
		// "system" entries are mid-conversation system messages, which the
		// real API and current clients (Claude Code) use.
		if *mm.Role != "user" && *mm.Role != "assistant" && *mm.Role != "system" {
			return invalid("messages.%d.role: Input should be 'user', 'assistant' or 'system'", i)
		}
		if mm.Content == nil || isNull(mm.Content) {
			return invalid("messages.%d.content: Field required", i)
		}
		msg := message{role: *mm.Role}
		last := i == len(raw)-1
		if mm.Content[0] == '"' {
			var s string
			if err := json.Unmarshal(mm.Content, &s); err != nil {
				return invalid("messages.%d.content: Input should be a valid string", i)
			}
			if s == "" && !(last && msg.role == "assistant") {
				return invalid("messages.%d: all messages must have non-empty content except for the optional final assistant message", i)
			}
			msg.text = true
			msg.blocks = []json.RawMessage{mm.Content}
		} else {
			if err := json.Unmarshal(mm.Content, &msg.blocks); err != nil {
				return invalid("messages.%d.content: Input should be a valid string or list of content blocks", i)
			}
			if len(msg.blocks) == 0 && !(last && msg.role == "assistant") {
				return invalid("messages.%d: all messages must have non-empty content except for the optional final assistant message", i)
			}
			for j, b := range msg.blocks {
				if e := checkBlock(b, fmt.Sprintf("messages.%d.content.%d", i, j)); e != nil {
					return e
				}
			}
		}
		p.messages = append(p.messages, msg)
	}
	return nil
}

// checkBlock validates the parts of a content block the emulator reads.
func checkBlock(b json.RawMessage, where string) *apiError {
	var blk struct {
		Type         *string         `json:"type"`
		Text         *string         `json:"text"`
		CacheControl json.RawMessage `json:"cache_control"`
	}
	if err := json.Unmarshal(b, &blk); err != nil {
		return invalid("%s: Input should be a valid dictionary", where)
	}
	if blk.Type == nil || *blk.Type == "" {
		return invalid("%s.type: Field required", where)
	}
	if *blk.Type == "text" {
		if blk.Text == nil {
			return invalid("%s.text: Field required", where)
		}
		if *blk.Text == "" {
			return invalid("%s: text content blocks must be non-empty", where)
		}
	}
	if blk.CacheControl != nil && !isNull(blk.CacheControl) {
		if _, e := parseCacheControl(blk.CacheControl, where+".cache_control"); e != nil {
			return e
		}
	}
	return nil
}

func parseCacheControl(v json.RawMessage, where string) (*cacheControl, *apiError) {
	var cc struct {
		Type string `json:"type"`
		TTL  string `json:"ttl"`
	}
	if err := json.Unmarshal(v, &cc); err != nil {
		return nil, invalid("%s: Input should be a valid dictionary", where)
	}
	if cc.Type != "ephemeral" {
		return nil, invalid("%s.type: Input should be 'ephemeral'", where)
	}
	switch cc.TTL {
	case "":
		cc.TTL = "5m"
	case "5m", "1h":
	default:
		return nil, invalid("%s.ttl: Input should be '5m' or '1h'", where)
	}
	return &cacheControl{TTL: cc.TTL}, nil
}

func (p *params) parseSystem(v json.RawMessage) *apiError {
	if v == nil || isNull(v) {
		return nil
	}
	if bytes.HasPrefix(bytes.TrimSpace(v), []byte(`"`)) {
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return invalid("system: Input should be a valid string")
		}
		if s != "" {
			p.system = []json.RawMessage{v}
			p.systemString = true
		}
		return nil
	}
	if err := json.Unmarshal(v, &p.system); err != nil {
		return invalid("system: Input should be a valid string or list of text blocks")
	}
	for i, b := range p.system {
		if e := checkBlock(b, fmt.Sprintf("system.%d", i)); e != nil {
			return e
		}
		var t struct{ Type string }
		json.Unmarshal(b, &t)
		if t.Type != "text" {
			return invalid("system.%d.type: Input should be 'text'", i)
		}
	}
	return nil
}

// lastUserText is the text of the last user message: its string content, or
// its text blocks and the text of its tool_result blocks joined by "\n".
func (p *params) lastUserText() string {
	for i := len(p.messages) - 1; i >= 0; i-- {
		m := p.messages[i]
		if m.role != "user" {
			continue
		}
		if m.text {
			var s string
			json.Unmarshal(m.blocks[0], &s)
			return s
		}
		var parts []string
		for _, b := range m.blocks {
			var blk struct {
				Type    string          `json:"type"`
				Text    string          `json:"text"`
				Content json.RawMessage `json:"content"`
			}
			json.Unmarshal(b, &blk)
			switch blk.Type {
			case "text":
				parts = append(parts, blk.Text)
			case "tool_result":
				parts = append(parts, toolResultText(blk.Content)...)
			}
		}
		return strings.Join(parts, "\n")
	}
	return ""
}

func toolResultText(c json.RawMessage) []string {
	if c == nil || isNull(c) {
		return nil
	}
	var s string
	if json.Unmarshal(c, &s) == nil {
		return []string{s}
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	json.Unmarshal(c, &blocks)
	var out []string
	for _, b := range blocks {
		if b.Type == "text" {
			out = append(out, b.Text)
		}
	}
	return out
}
