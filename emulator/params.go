package emulator

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// knownParams are the top-level create-message fields the emulator accepts;
// any other field is rejected, as the real API does ("Extra inputs are not
// permitted").
var knownParams = map[string]bool{
	"model": true, "max_tokens": true, "messages": true, "system": true, "tools": true,
	"tool_choice": true, "stream": true, "metadata": true, "temperature": true, "top_p": true,
	"top_k": true, "stop_sequences": true, "thinking": true, "cache_control": true,
	"service_tier": true, "output_config": true, "inference_geo": true, "container": true,
	"mcp_servers": true, "context_management": true, "output_format": true, "user_profile_id": true,
	"speed": true, "store": true, "previous_thread_event_id": true, "cache_hint": true,
	"context_hint": true, "research_preview_2026_02": true,
	// Newer fields of the official SDKs (cache diagnostics; beta compaction
	// and fallbacks): tolerated, not acted on.
	"diagnostics": true, "compaction": true, "fallbacks": true, "fallback_credit_token": true,
}

// batchForbidden are parameters the Batches API refuses inside params.
var batchForbidden = []string{"speed", "store", "previous_thread_event_id", "cache_hint", "context_hint", "research_preview_2026_02"}

var toolNameRE = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,128}$`)

// params is a decoded create-message body.
type params struct {
	raw           []byte
	digest        string // hash of the canonical body without "stream"
	model         string
	maxTokens     int64
	stream        bool
	messages      []message
	system        []json.RawMessage // text blocks, or one JSON string
	systemString  bool
	tools         []tool
	toolChoice    string // "", auto, any, tool, none
	toolName      string // for tool_choice tool
	thinking      string // "", enabled, adaptive, disabled
	stopSequences []string
	cacheControl  *cacheControl // top-level (automatic caching)
}

type message struct {
	role   string
	text   bool              // content was a plain string
	blocks []json.RawMessage // content blocks (or the one JSON string)
}

type tool struct {
	raw  json.RawMessage
	name string
}

type cacheControl struct {
	TTL string // "5m" or "1h"
}

// mode says which endpoint params are validated for.
type mode int

const (
	modeSync mode = iota
	modeBatch
	modeCount
)

// parseParams decodes and validates a create-message body as the real API
// does for the given endpoint mode.
func parseParams(body []byte, m mode) (*params, *apiError) {
	var top map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&top); err != nil {
		return nil, invalid("Invalid JSON in request body: %v", err)
	}
	if dec.More() || top == nil {
		return nil, invalid("Invalid JSON in request body: expected a single JSON object")
	}
	p := &params{raw: body, digest: digest(top)}
	for k := range top {
		if !knownParams[k] {
			return nil, invalid("%s: Extra inputs are not permitted", k)
		}
	}
	if m == modeBatch {
		for _, k := range batchForbidden {
			if _, ok := top[k]; ok {
				return nil, invalid("%s: this parameter is not supported in the Message Batches API", k)
			}
		}
	}

	if v, ok := top["model"]; !ok || isNull(v) {
		return nil, invalid("model: Field required")
	} else if err := json.Unmarshal(v, &p.model); err != nil || p.model == "" {
		return nil, invalid("model: Input should be a non-empty string")
	}

	if v, ok := top["stream"]; ok && !isNull(v) {
		if err := json.Unmarshal(v, &p.stream); err != nil {
			return nil, invalid("stream: Input should be a valid boolean")
		}
		if m == modeCount {
			return nil, invalid("stream: Extra inputs are not permitted")
		}
		if m == modeBatch && p.stream {
			return nil, invalid("stream: streaming is not supported in the Message Batches API")
		}
	}

	if m != modeCount {
		v, ok := top["max_tokens"]
		if !ok || isNull(v) {
			return nil, invalid("max_tokens: Field required")
		}
		if err := json.Unmarshal(v, &p.maxTokens); err != nil {
			return nil, invalid("max_tokens: Input should be a valid integer")
		}
		if p.maxTokens < 0 {
			return nil, invalid("max_tokens: Input should be greater than or equal to 0")
		}
	} else if _, ok := top["max_tokens"]; ok {
		return nil, invalid("max_tokens: Extra inputs are not permitted")
	}

	if e := p.parseMessages(top["messages"]); e != nil {
		return nil, e
	}
	if e := p.parseSystem(top["system"]); e != nil {
		return nil, e
	}
	if e := p.parseTools(top["tools"], top["tool_choice"]); e != nil {
		return nil, e
	}
	if e := p.parseThinking(top["thinking"]); e != nil {
		return nil, e
	}
	if v, ok := top["stop_sequences"]; ok && !isNull(v) {
		if err := json.Unmarshal(v, &p.stopSequences); err != nil {
			return nil, invalid("stop_sequences: Input should be a valid list of strings")
		}
	}
	if v, ok := top["temperature"]; ok && !isNull(v) {
		var t float64
		if err := json.Unmarshal(v, &t); err != nil || t < 0 || t > 1 {
			return nil, invalid("temperature: Input should be a number between 0 and 1")
		}
	}
	if v, ok := top["cache_control"]; ok && !isNull(v) {
		cc, e := parseCacheControl(v, "cache_control")
		if e != nil {
			return nil, e
		}
		p.cacheControl = cc
	}

	if m != modeCount && p.maxTokens == 0 {
		switch {
		case m == modeBatch:
			return nil, invalid("max_tokens: must be at least 1 in the Message Batches API")
		case p.stream:
			return nil, invalid("max_tokens: must be at least 1 when stream is true")
		case p.thinking == "enabled":
			return nil, invalid("max_tokens: must be at least 1 when thinking is enabled")
		case p.toolChoice == "any" || p.toolChoice == "tool":
			return nil, invalid("max_tokens: must be at least 1 when tool_choice is %q", p.toolChoice)
		}
	}
	if _, e := promptBlocks(p); e != nil {
		return nil, e
	}
	return p, nil
}

// digest hashes the canonical form of a body (members sorted, whitespace
// removed, "stream" left out), so that a reply does not depend on layout or
// on whether it is streamed.
func digest(top map[string]json.RawMessage) string {
	canon := make(map[string]json.RawMessage, len(top))
	for k, v := range top {
		if k == "stream" {
			continue
		}
		var buf bytes.Buffer
		if json.Compact(&buf, v) == nil {
			v = buf.Bytes()
		}
		canon[k] = v
	}
	b, _ := json.Marshal(canon)
	sum := sha256.Sum256(b)
	return string(sum[:])
}

func isNull(v json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(v), []byte("null")) }

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

func (p *params) parseTools(v, choice json.RawMessage) *apiError {
	if v != nil && !isNull(v) {
		var raw []json.RawMessage
		if err := json.Unmarshal(v, &raw); err != nil {
			return invalid("tools: Input should be a valid list")
		}
		for i, r := range raw {
			var t struct {
				Type         string          `json:"type"`
				Name         *string         `json:"name"`
				InputSchema  json.RawMessage `json:"input_schema"`
				CacheControl json.RawMessage `json:"cache_control"`
			}
			if err := json.Unmarshal(r, &t); err != nil {
				return invalid("tools.%d: Input should be a valid dictionary", i)
			}
			if t.Name == nil {
				return invalid("tools.%d.name: Field required", i)
			}
			if t.Type == "" || t.Type == "custom" {
				if !toolNameRE.MatchString(*t.Name) {
					return invalid("tools.%d.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'", i)
				}
				if t.InputSchema == nil || isNull(t.InputSchema) {
					return invalid("tools.%d.input_schema: Field required", i)
				}
			}
			if t.CacheControl != nil && !isNull(t.CacheControl) {
				if _, e := parseCacheControl(t.CacheControl, fmt.Sprintf("tools.%d.cache_control", i)); e != nil {
					return e
				}
			}
			for _, prev := range p.tools {
				if prev.name == *t.Name {
					return invalid("tools: Tool names must be unique.")
				}
			}
			p.tools = append(p.tools, tool{raw: r, name: *t.Name})
		}
	}
	if choice == nil || isNull(choice) {
		return nil
	}
	var tc struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	if err := json.Unmarshal(choice, &tc); err != nil {
		return invalid("tool_choice: Input should be a valid dictionary")
	}
	switch tc.Type {
	case "auto", "none":
	case "any":
		if len(p.tools) == 0 {
			return invalid("tool_choice: tool_choice.type 'any' requires tools")
		}
	case "tool":
		found := false
		for _, t := range p.tools {
			found = found || t.name == tc.Name
		}
		if !found {
			return invalid("tool_choice.name: Tool '%s' not found in the provided tools", tc.Name)
		}
	default:
		return invalid("tool_choice.type: Input should be 'auto', 'any', 'tool' or 'none'")
	}
	p.toolChoice, p.toolName = tc.Type, tc.Name
	return nil
}

func (p *params) parseThinking(v json.RawMessage) *apiError {
	if v == nil || isNull(v) {
		return nil
	}
	var th struct {
		Type         string `json:"type"`
		BudgetTokens *int64 `json:"budget_tokens"`
	}
	if err := json.Unmarshal(v, &th); err != nil {
		return invalid("thinking: Input should be a valid dictionary")
	}
	switch th.Type {
	case "enabled":
		if th.BudgetTokens == nil {
			return invalid("thinking.enabled.budget_tokens: Field required")
		}
		if *th.BudgetTokens < 1024 {
			return invalid("thinking.enabled.budget_tokens: Input should be greater than or equal to 1024")
		}
		if p.maxTokens > 0 && *th.BudgetTokens >= p.maxTokens {
			return invalid("max_tokens must be greater than thinking.budget_tokens")
		}
	case "adaptive", "disabled":
	default:
		return invalid("thinking.type: Input should be 'enabled', 'adaptive' or 'disabled'")
	}
	p.thinking = th.Type
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
