package claudewire

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/jsonmember"
)

// PromptOf reads the prompt-cache structure of a Messages API body: its
// prompt flattened into blocks in the order the API caches them (each
// tool, each system block, each message content block; a string system
// or content is one block), the blocks carrying cache_control as
// breakpoints (a top-level cache_control marks the last block), each
// breakpoint's prefix identified by a chained hash of the model and the
// blocks up to it. The hash leaves cache_control out of the blocks, as
// the API's cache does: the next turn of a conversation, which moves its
// breakpoint to its new last message, names the earlier prefix alike.
// Tokens are estimated at a quarter of the bytes. The conversation is the
// hash of the prefix through the first message.
func PromptOf(body []byte) (llmfleet.Prompt, error) {
	var top struct {
		Model        string            `json:"model"`
		Tools        []json.RawMessage `json:"tools"`
		System       json.RawMessage   `json:"system"`
		Messages     []json.RawMessage `json:"messages"`
		CacheControl json.RawMessage   `json:"cache_control"`
	}
	if err := json.Unmarshal(body, &top); err != nil {
		return llmfleet.Prompt{}, err
	}
	f := flattener{h: sha256.Sum256([]byte("model|" + top.Model))}
	for _, t := range top.Tools {
		f.add("tool|", t, true)
	}
	if err := f.system(top.System); err != nil {
		return llmfleet.Prompt{}, err
	}
	for i, m := range top.Messages {
		if err := f.message(m); err != nil {
			return llmfleet.Prompt{}, err
		}
		if i == 0 {
			f.p.Conversation = hex.EncodeToString(f.h[:16])
		}
	}
	if cc := ttlOf(top.CacheControl); cc > 0 && f.p.Bytes > 0 {
		n := len(f.p.Breakpoints)
		if n == 0 || f.p.Breakpoints[n-1].Hash != f.last {
			f.recent = f.recent[:max(len(f.recent)-1, 0)] // the last block is the breakpoint
			f.p.Breakpoints = append(f.p.Breakpoints, llmfleet.Breakpoint{Hash: f.last, Bytes: f.p.Bytes, Tokens: f.p.Bytes / 4,
				TTL: cc, Earlier: f.earlier()})
		}
	}
	f.p.Tokens = f.p.Bytes / 4
	return f.p, nil
}

// lookback is how many blocks before a breakpoint (itself included)
// the API's cache lookup looks at.
const lookback = 20

// flattener builds a Prompt block by block.
type flattener struct {
	h      [32]byte // the chained hash so far
	last   string   // its hex form
	p      llmfleet.Prompt
	recent []llmfleet.Prefix // the prefixes ending at the last blocks, oldest first
}

// add appends a block; with cacheable, its cache_control (if any) makes
// it a breakpoint.
func (f *flattener) add(kind string, raw json.RawMessage, cacheable bool) {
	ttl := time.Duration(0)
	plain := raw
	if cacheable && bytes.HasPrefix(bytes.TrimSpace(raw), []byte("{")) {
		var b struct {
			CacheControl json.RawMessage `json:"cache_control"`
		}
		if json.Unmarshal(raw, &b) == nil && len(b.CacheControl) > 0 {
			ttl = ttlOf(b.CacheControl)
			if p, err := jsonmember.Delete(raw, "cache_control"); err == nil {
				plain = p
			}
		}
	}
	var c bytes.Buffer
	if json.Compact(&c, plain) == nil {
		plain = c.Bytes()
	}
	s := sha256.New()
	s.Write(f.h[:])
	s.Write([]byte(kind))
	s.Write(plain)
	copy(f.h[:], s.Sum(nil))
	f.last = hex.EncodeToString(f.h[:16])
	f.p.Bytes += int64(len(raw))
	if ttl > 0 {
		f.p.Breakpoints = append(f.p.Breakpoints, llmfleet.Breakpoint{Hash: f.last, Bytes: f.p.Bytes, Tokens: f.p.Bytes / 4,
			TTL: ttl, Earlier: f.earlier()})
	}
	f.recent = append(f.recent, llmfleet.Prefix{Hash: f.last, Bytes: f.p.Bytes})
	if len(f.recent) >= lookback {
		f.recent = f.recent[1:]
	}
}

// earlier returns the prefixes of the blocks before the current one that
// a lookup at it looks at, nearest first.
func (f *flattener) earlier() []llmfleet.Prefix {
	out := make([]llmfleet.Prefix, 0, len(f.recent))
	for i := len(f.recent) - 1; i >= 0; i-- {
		out = append(out, f.recent[i])
	}
	return out
}

// system adds the system prompt: a string (one block, no breakpoint) or
// an array of blocks.
func (f *flattener) system(raw json.RawMessage) error {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0 || bytes.Equal(raw, []byte("null")):
		return nil
	case raw[0] == '"':
		f.add("system|", raw, false)
		return nil
	}
	var blocks []json.RawMessage
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return errors.New("system: not a string or an array of blocks")
	}
	for _, b := range blocks {
		f.add("system|", b, true)
	}
	return nil
}

// message adds a message's content: a string (one block, no breakpoint)
// or an array of blocks.
func (f *flattener) message(raw json.RawMessage) error {
	var m struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return errors.New("messages: not an array of objects")
	}
	c := bytes.TrimSpace(m.Content)
	if len(c) > 0 && c[0] == '"' {
		f.add(m.Role+"|", c, false)
		return nil
	}
	var blocks []json.RawMessage
	if err := json.Unmarshal(c, &blocks); err != nil {
		return errors.New("messages: content is not a string or an array of blocks")
	}
	for _, b := range blocks {
		f.add(m.Role+"|", b, true)
	}
	return nil
}

// ttlOf returns the TTL a cache_control value asks for: an hour for
// "1h", five minutes for any other ephemeral one, 0 for none (absent or
// null).
func ttlOf(cc json.RawMessage) time.Duration {
	cc = bytes.TrimSpace(cc)
	if len(cc) == 0 || bytes.Equal(cc, []byte("null")) {
		return 0
	}
	var c struct {
		TTL string `json:"ttl"`
	}
	if json.Unmarshal(cc, &c) == nil && c.TTL == "1h" {
		return time.Hour
	}
	return 5 * time.Minute
}

// ttl1h is the cache_control of a breakpoint whose TTL is an hour.
var ttl1h = []byte(`{"type":"ephemeral","ttl":"1h"}`)

// UpgradeTTL returns body with every cache_control of a 5-minute TTL
// (the default) raised to an hour: in tools, system blocks, message
// content blocks and at the top level, every other byte kept. It returns
// how many it raised; body itself when none. Raising them all keeps the
// API's rule that a 1h breakpoint never follows a 5m one.
func UpgradeTTL(body []byte) ([]byte, int, error) {
	ms, err := jsonmember.Members(body)
	if err != nil {
		return nil, 0, err
	}
	var edits []jsonmember.Edit
	n := 0
	for _, m := range ms {
		var v []byte
		var k int
		switch m.Key {
		case "tools", "system":
			v, k = upgradeBlocks(m.Value(body))
		case "messages":
			v, k = upgradeMessages(m.Value(body))
		case "cache_control":
			if t := ttlOf(m.Value(body)); t > 0 && t < time.Hour {
				v, k = ttl1h, 1
			}
		}
		if k > 0 {
			edits, n = append(edits, jsonmember.Edit{Key: m.Key, Value: v}), n+k
		}
	}
	if n == 0 {
		return body, 0, nil
	}
	return jsonmember.Replace(body, ms, edits...), n, nil
}

// upgradeBlocks raises the 5-minute cache_control of the blocks of arr,
// an array of blocks (anything else is left alone).
func upgradeBlocks(arr []byte) ([]byte, int) {
	els, err := jsonmember.Elements(arr)
	if err != nil {
		return arr, 0
	}
	n := 0
	for i, el := range els {
		ms, err := jsonmember.Members(el)
		if err != nil {
			continue
		}
		cc, ok := jsonmember.Find(ms, "cache_control")
		if t := ttlOf(cc.Value(el)); !ok || t == 0 || t >= time.Hour {
			continue
		}
		els[i] = jsonmember.Replace(el, ms, jsonmember.Edit{Key: "cache_control", Value: ttl1h})
		n++
	}
	if n == 0 {
		return arr, 0
	}
	return append(append([]byte("["), bytes.Join(els, []byte(","))...), ']'), n
}

// upgradeMessages raises the 5-minute cache_control of the content
// blocks of arr, an array of messages.
func upgradeMessages(arr []byte) ([]byte, int) {
	els, err := jsonmember.Elements(arr)
	if err != nil {
		return arr, 0
	}
	n := 0
	for i, el := range els {
		ms, err := jsonmember.Members(el)
		if err != nil {
			continue
		}
		c, ok := jsonmember.Find(ms, "content")
		if !ok {
			continue
		}
		v, k := upgradeBlocks(c.Value(el))
		if k > 0 {
			els[i] = jsonmember.Replace(el, ms, jsonmember.Edit{Key: "content", Value: v})
			n += k
		}
	}
	if n == 0 {
		return arr, 0
	}
	return append(append([]byte("["), bytes.Join(els, []byte(","))...), ']'), n
}
