package simulate

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/llmfleet/llmfleet"
)

// BodyPrompt is the prompt structure a synthetic body carries (member
// "prompt") for a turn whose usage the provider's prompt cache computes:
// the prompt opens with SystemTokens of the system prompt System, then
// continues the conversation Conversation; Breakpoints are its cache
// breakpoints, the body's input_tokens its size.
type BodyPrompt struct {
	System       string         `json:"system"`
	SystemTokens int64          `json:"system_tokens"`
	Conversation string         `json:"conversation"`
	Breakpoints  []BreakpointAt `json:"breakpoints"`
}

// check reports what is wrong with the prompt of a body of total input
// tokens.
func (p *BodyPrompt) check(total int64) error {
	if p.SystemTokens < 0 || p.SystemTokens > total {
		return fmt.Errorf("prompt.system_tokens %d is not within the prompt's %d tokens", p.SystemTokens, total)
	}
	if p.Conversation == "" {
		return fmt.Errorf("prompt.conversation: required")
	}
	return checkBreakpoints(p.Breakpoints, total)
}

// Prompt returns the llmfleet.Prompt of a body of model and total input
// tokens, as a provider's Inspect reads it from a real request: a
// breakpoint's prefix is the system prompt's alone (shared by every
// conversation that opens with it, for the model) when it ends within
// it, the conversation's otherwise; an agent's turns extend each other,
// so the prefix of its first n tokens is the same in every turn that
// has them. A token counts 4 bytes.
func (p *BodyPrompt) Prompt(model string, total int64) llmfleet.Prompt {
	out := llmfleet.Prompt{Tokens: total, Bytes: 4 * total, Conversation: prefixHash(model, p.System, p.Conversation, -1)}
	for _, b := range p.Breakpoints {
		conv := p.Conversation
		if b.Tokens <= p.SystemTokens {
			conv = ""
		}
		ttl := 5 * time.Minute
		if b.TTL == "1h" {
			ttl = time.Hour
		}
		out.Breakpoints = append(out.Breakpoints, llmfleet.Breakpoint{Hash: prefixHash(model, p.System, conv, b.Tokens),
			Tokens: b.Tokens, Bytes: 4 * b.Tokens, TTL: ttl})
	}
	return out
}

// prefixHash identifies the prefix of tokens tokens of conversation conv
// opening with system prompt system, for model ("" conv: the system
// prompt's own prefix; tokens -1: the conversation itself).
func prefixHash(model, system, conv string, tokens int64) string {
	sum := sha256.Sum256([]byte(strconv.Quote(model) + strconv.Quote(system) + strconv.Quote(conv) + strconv.FormatInt(tokens, 10)))
	return hex.EncodeToString(sum[:16])
}

// turnPrompt is the BodyPrompt of a turn (nil for a turn without a
// prompt structure): its agent's conversation.
func turnPrompt(t Turn) *BodyPrompt {
	if !t.Prompted() {
		return nil
	}
	return &BodyPrompt{System: t.System, SystemTokens: t.SystemTokens, Conversation: t.Agent, Breakpoints: t.Breakpoints}
}

// promptOfTurn is the llmfleet.Prompt of a turn's body.
func promptOfTurn(t Turn) llmfleet.Prompt {
	p := turnPrompt(t)
	if p == nil {
		return llmfleet.Prompt{Tokens: t.InputTokens, Bytes: 4 * t.InputTokens}
	}
	return p.Prompt(t.Model, t.InputTokens)
}

// turnBody is the synthetic body of a turn: with its prompt structure
// when it has one.
func turnBody(t Turn) json.RawMessage {
	id := fmt.Sprintf("%s/%d", t.Agent, t.Turn)
	p := turnPrompt(t)
	if p == nil {
		return bodyOf(t.Model, id, t.InputTokens, t.OutputTokens, t.CacheReadTokens, t.CacheWriteTokens)
	}
	return promptBody(t.Model, id, t.InputTokens, t.OutputTokens, p)
}

// promptBody is the synthetic body of a prompt p of in tokens.
func promptBody(model, id string, in, out int64, p *BodyPrompt) json.RawMessage {
	b := bodyOf(model, id, in, out, 0, 0)
	j, err := json.Marshal(p)
	if err != nil {
		panic(err) // strings and numbers always marshal
	}
	b = append(b[:len(b)-1], `,"prompt":`...)
	b = append(b, j...)
	return append(b, '}')
}
