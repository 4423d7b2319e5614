package emulator

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
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
// does for the given endpoint mode: the body's members, then each field by
// paramParsers in the order the API reports their errors, then the prompt.
func parseParams(body []byte, m mode) (*params, *apiError) {
	top, e := decodeTop(body, m)
	if e != nil {
		return nil, e
	}
	p := &params{raw: body, digest: digest(top)}
	for _, parse := range paramParsers {
		if e := parse(p, top, m); e != nil {
			return nil, e
		}
	}
	if _, e := promptBlocks(p); e != nil {
		return nil, e
	}
	return p, nil
}

// paramParser reads its fields of a body's top-level members into p, or
// refuses them as the API does for the endpoint mode m.
type paramParser func(p *params, top map[string]json.RawMessage, m mode) *apiError

// paramParsers are the field parsers of a create-message body, in the
// order the API checks them (the first refusal is the answer).
var paramParsers = []paramParser{
	(*params).readModel,
	(*params).readStream,
	(*params).readMaxTokens,
	func(p *params, top map[string]json.RawMessage, _ mode) *apiError {
		return p.parseMessages(top["messages"])
	},
	func(p *params, top map[string]json.RawMessage, _ mode) *apiError { return p.parseSystem(top["system"]) },
	func(p *params, top map[string]json.RawMessage, _ mode) *apiError {
		return p.parseTools(top["tools"], top["tool_choice"])
	},
	func(p *params, top map[string]json.RawMessage, _ mode) *apiError {
		return p.parseThinking(top["thinking"])
	},
	(*params).readStopSequences,
	(*params).readTemperature,
	(*params).readCacheControl,
	(*params).checkMaxTokens,
}

// decodeTop decodes a body into its top-level members, refusing a body
// that is not one JSON object, a member the API does not know, and, in
// the Batches API, one it refuses there.
func decodeTop(body []byte, m mode) (map[string]json.RawMessage, *apiError) {
	var top map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&top); err != nil {
		return nil, invalid("Invalid JSON in request body: %v", err)
	}
	if dec.More() || top == nil {
		return nil, invalid("Invalid JSON in request body: expected a single JSON object")
	}
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
	return top, nil
}

// readModel reads the required model.
func (p *params) readModel(top map[string]json.RawMessage, _ mode) *apiError {
	if v, ok := top["model"]; !ok || isNull(v) {
		return invalid("model: Field required")
	} else if err := json.Unmarshal(v, &p.model); err != nil || p.model == "" {
		return invalid("model: Input should be a non-empty string")
	}
	return nil
}

// readStream reads stream, refused by count_tokens and, when true, by
// the Batches API.
func (p *params) readStream(top map[string]json.RawMessage, m mode) *apiError {
	v, ok := top["stream"]
	if !ok || isNull(v) {
		return nil
	}
	if err := json.Unmarshal(v, &p.stream); err != nil {
		return invalid("stream: Input should be a valid boolean")
	}
	if m == modeCount {
		return invalid("stream: Extra inputs are not permitted")
	}
	if m == modeBatch && p.stream {
		return invalid("stream: streaming is not supported in the Message Batches API")
	}
	return nil
}

// readMaxTokens reads max_tokens, required but by count_tokens, which
// refuses it.
func (p *params) readMaxTokens(top map[string]json.RawMessage, m mode) *apiError {
	if m == modeCount {
		if _, ok := top["max_tokens"]; ok {
			return invalid("max_tokens: Extra inputs are not permitted")
		}
		return nil
	}
	v, ok := top["max_tokens"]
	if !ok || isNull(v) {
		return invalid("max_tokens: Field required")
	}
	if err := json.Unmarshal(v, &p.maxTokens); err != nil {
		return invalid("max_tokens: Input should be a valid integer")
	}
	if p.maxTokens < 0 {
		return invalid("max_tokens: Input should be greater than or equal to 0")
	}
	return nil
}

// readStopSequences reads stop_sequences.
func (p *params) readStopSequences(top map[string]json.RawMessage, _ mode) *apiError {
	if v, ok := top["stop_sequences"]; ok && !isNull(v) {
		if err := json.Unmarshal(v, &p.stopSequences); err != nil {
			return invalid("stop_sequences: Input should be a valid list of strings")
		}
	}
	return nil
}

// readTemperature checks temperature (not kept: replies do not depend
// on it).
func (p *params) readTemperature(top map[string]json.RawMessage, _ mode) *apiError {
	if v, ok := top["temperature"]; ok && !isNull(v) {
		var t float64
		if err := json.Unmarshal(v, &t); err != nil || t < 0 || t > 1 {
			return invalid("temperature: Input should be a number between 0 and 1")
		}
	}
	return nil
}

// readCacheControl reads the top-level cache_control (automatic caching).
func (p *params) readCacheControl(top map[string]json.RawMessage, _ mode) *apiError {
	if v, ok := top["cache_control"]; ok && !isNull(v) {
		cc, e := parseCacheControl(v, "cache_control")
		if e != nil {
			return e
		}
		p.cacheControl = cc
	}
	return nil
}

// checkMaxTokens refuses a max_tokens of 0 (a pre-warm) where the API
// does: in the Batches API, when streaming, with thinking enabled, or
// with a tool_choice that forces a tool.
func (p *params) checkMaxTokens(_ map[string]json.RawMessage, m mode) *apiError {
	if m == modeCount || p.maxTokens != 0 {
		return nil
	}
	switch {
	case m == modeBatch:
		return invalid("max_tokens: must be at least 1 in the Message Batches API")
	case p.stream:
		return invalid("max_tokens: must be at least 1 when stream is true")
	case p.thinking == "enabled":
		return invalid("max_tokens: must be at least 1 when thinking is enabled")
	case p.toolChoice == "any" || p.toolChoice == "tool":
		return invalid("max_tokens: must be at least 1 when tool_choice is %q", p.toolChoice)
	}
	return nil
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
