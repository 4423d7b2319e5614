package llmfleet

import "time"

// Prompt is what the cost of a request's input depends on beyond its
// size: the prompt-cache breakpoints it carries (Anthropic: the blocks
// with cache_control). A provider's Inspect reads it from the request; a
// request without breakpoints has none, and its input is priced as
// uncached input whatever route it takes.
//
// A cached prefix is read at a tenth of the input price (per model) on
// the route that wrote it; a prefix written by the sync route is seldom
// read by a batch, and batch reads are best effort, so a request's route
// decides what its prompt costs as much as its discount does (see
// package cachecost).
type Prompt struct {
	// Breakpoints are the prompt's cache breakpoints, in prompt order.
	Breakpoints []Breakpoint
	// Tokens is the size of the whole input, in tokens (estimated from
	// its bytes by the provider).
	Tokens int64
	// Bytes is the size of the whole input, in bytes of its JSON.
	Bytes int64
	// Conversation names the conversation the request continues: a hash
	// of its prompt up to and including its first user turn (tools and
	// system included), so that the turns of one agent share it and
	// agents sharing a system prompt do not. Empty when unknown.
	Conversation string
}

// Breakpoint is one prompt-cache breakpoint: the prefix of the prompt up
// to and including a block marked for caching.
type Breakpoint struct {
	// Hash identifies the prefix: a hash of the model and the prefix's
	// content, equal for two requests whose prompts share the prefix.
	Hash string
	// Tokens is the prefix's size in tokens (estimated from its bytes by
	// the provider; the engine learns the real count from usage).
	Tokens int64
	// Bytes is the prefix's size in bytes of its JSON.
	Bytes int64
	// TTL is the time to live its cache_control asks for: 5 minutes
	// (the default) or an hour.
	TTL time.Duration
	// Earlier are the prefixes ending at the blocks just before it
	// (nearest first; Anthropic's lookup looks back 20 blocks from a
	// breakpoint): an earlier turn of the conversation cached its prompt
	// at its own last block, which is one of these once the breakpoint
	// has moved on to the new last message.
	Earlier []Prefix
}

// Prefix is a prefix of a prompt that a cache lookup may find: its hash
// (as Breakpoint.Hash) and its size in bytes.
type Prefix struct {
	Hash  string
	Bytes int64
}

// Cached reports whether the prompt has a cache breakpoint.
func (p Prompt) Cached() bool { return len(p.Breakpoints) > 0 }

// Last returns the prompt's last breakpoint; ok is false without one.
func (p Prompt) Last() (b Breakpoint, ok bool) {
	if len(p.Breakpoints) == 0 {
		return Breakpoint{}, false
	}
	return p.Breakpoints[len(p.Breakpoints)-1], true
}
