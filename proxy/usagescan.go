package proxy

import (
	"bytes"
	"encoding/json"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/sse"
)

// The scanners below read a response as it streams by, in pieces of any
// size, and keep only what the ledger needs. Neither holds the response:
// the JSON scanner keeps a few top-level members, the event scanner the
// data line of the few events that carry usage.

// maxKept bounds what a scanner keeps of one member or one event; larger
// ones are skipped.
const maxKept = 1 << 20

// jsonTap scans a JSON object and keeps the raw values of its top-level
// members "model", "usage" and "error": enough to read a Message's usage
// or an error envelope's type.
type jsonTap struct {
	depth     int
	inStr     bool
	esc       bool
	key       []byte // the string being read at depth 1, raw, up to maxKey bytes
	keyLong   bool
	lastKey   member // the kept member the last string completed at depth 1 names
	expect    bool   // a ':' at depth 1 was seen: a value comes next
	capturing member // the member whose value is being kept
	val       []byte
	model     []byte
	usage     []byte
	err       []byte

	// Room for the usual sizes of what is kept, so that a short answer
	// is scanned without an allocation of its own.
	keyBuf   [maxKey]byte
	valBuf   [512]byte
	modelBuf [64]byte
	usageBuf [512]byte
}

// member names a top-level member the JSON tap keeps.
type member uint8

// The members kept; noMember is any other.
const (
	noMember member = iota
	memberModel
	memberUsage
	memberError
)

// memberOf returns the member a key's raw text names.
func memberOf(raw []byte) member {
	if bytes.IndexByte(raw, '\\') >= 0 {
		raw = []byte(keyText(raw))
	}
	switch string(raw) {
	case "model":
		return memberModel
	case "usage":
		return memberUsage
	case "error":
		return memberError
	}
	return noMember
}

// write scans p.
func (t *jsonTap) write(p []byte) {
	for i := 0; i < len(p); i++ {
		if t.capturing == noMember && t.depth > 1 && !t.esc {
			// Deep inside a member not kept (the content, typically):
			// only the bytes that open or close a string or a bracket
			// matter, and a string only its quote and escapes.
			stops := `"{}[]`
			if t.inStr {
				stops = `"\`
			}
			j := bytes.IndexAny(p[i:], stops)
			if j < 0 {
				return
			}
			i += j
		}
		c := p[i]
		if t.expect && t.depth == 1 && !t.inStr && c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			t.expect = false
			if t.lastKey != noMember {
				if t.val == nil {
					t.val = t.valBuf[:0]
				}
				t.capturing, t.val = t.lastKey, t.val[:0]
			}
		}
		if t.capturing != noMember {
			if len(t.val) < maxKept {
				t.val = append(t.val, c)
			} else {
				t.capturing = noMember // too large to be what we look for
			}
		}
		if t.inStr {
			closing := c == '"' && !t.esc
			switch {
			case t.esc:
				t.esc = false
			case c == '\\':
				t.esc = true
			}
			switch {
			case closing:
				t.inStr = false
				if t.depth == 1 && !t.keyLong {
					t.lastKey = memberOf(t.key)
				}
			case t.depth == 1:
				if len(t.key) < maxKey {
					t.key = append(t.key, c)
				} else {
					t.keyLong = true
				}
			}
			continue
		}
		switch c {
		case '"':
			if t.key == nil {
				t.key = t.keyBuf[:0]
			}
			t.inStr, t.key, t.keyLong, t.lastKey = true, t.key[:0], false, noMember
		case '{', '[':
			t.depth++
		case '}', ']':
			t.depth--
			if t.depth == 0 {
				t.endValue()
			}
		case ':':
			if t.depth == 1 {
				t.expect = true
			}
		case ',':
			if t.depth == 1 {
				t.endValue()
			}
		}
	}
}

// maxKey bounds the raw text of a key the JSON tap reads: enough for
// "model", "usage" and "error" with every letter escaped.
const maxKey = 32

// keyText returns the text of raw, a JSON string's raw contents.
func keyText(raw []byte) string {
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw)
	}
	var s string
	_ = json.Unmarshal(append(append([]byte{'"'}, raw...), '"'), &s)
	return s
}

// endValue ends the value being kept at the ',' or '}' just appended.
func (t *jsonTap) endValue() {
	if t.capturing == noMember {
		return
	}
	v := bytes.TrimSpace(t.val[:len(t.val)-1])
	switch t.capturing {
	case memberModel:
		t.model = append(t.modelBuf[:0], v...)
	case memberUsage:
		t.usage = append(t.usageBuf[:0], v...)
	case memberError:
		t.err = append(t.err[:0], v...)
	}
	t.capturing = noMember
}

// result decodes what was kept: the model, the usage and, for an error
// envelope, the error type.
func (t *jsonTap) result() (model string, u llmfleet.Usage, errType string) {
	if t.model != nil {
		model = decodeString(t.model)
	}
	if t.usage != nil {
		u = decodeUsage(t.usage)
	}
	if t.err != nil {
		var e struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal(t.err, &e)
		errType = e.Type
	}
	return model, u, errType
}

// sseTap scans a Messages API event stream: the usage of message_start,
// updated by the cumulative usage of each message_delta, the model, and
// the type of an error event. Only the data of those events is held, one
// event at a time.
type sseTap struct {
	d sse.Decoder

	model   string
	usage   llmfleet.Usage
	errType string
}

// write scans p.
func (t *sseTap) write(p []byte) {
	if t.d.Emit == nil {
		t.d = sse.Decoder{Emit: t.event, Keep: keptEvent, MaxData: maxKept}
	}
	t.d.Write(p)
}

// keptEvent reports whether the data of an event named name is read: the
// events that carry usage or an error, and those without a name, whose
// data says what they are.
func keptEvent(name string) bool {
	switch name {
	case "", "message_start", "message_delta", "error":
		return true
	}
	return false
}

// streamDeltaUsage is the usage of a message_delta event: cumulative counts,
// each of which may be absent or null.
type streamDeltaUsage struct {
	InputTokens              *int64 `json:"input_tokens"`
	OutputTokens             *int64 `json:"output_tokens"`
	CacheCreationInputTokens *int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     *int64 `json:"cache_read_input_tokens"`
	CacheCreation            *struct {
		Ephemeral5mInputTokens int64 `json:"ephemeral_5m_input_tokens"`
		Ephemeral1hInputTokens int64 `json:"ephemeral_1h_input_tokens"`
	} `json:"cache_creation"`
}

// event handles one kept event.
func (t *sseTap) event(e sse.Event) {
	var ev struct {
		Type    string `json:"type"`
		Message *struct {
			Model string         `json:"model"`
			Usage llmfleet.Usage `json:"usage"`
		} `json:"message"`
		Usage *streamDeltaUsage `json:"usage"`
		Error *struct {
			Type string `json:"type"`
		} `json:"error"`
	}
	if json.Unmarshal(e.Data, &ev) != nil {
		return
	}
	switch ev.Type {
	case "message_start":
		if ev.Message != nil {
			t.model, t.usage = ev.Message.Model, ev.Message.Usage
		}
	case "message_delta":
		if d := ev.Usage; d != nil {
			set := func(dst *int64, v *int64) {
				if v != nil {
					*dst = *v
				}
			}
			set(&t.usage.InputTokens, d.InputTokens)
			set(&t.usage.OutputTokens, d.OutputTokens)
			set(&t.usage.CacheCreationInputTokens, d.CacheCreationInputTokens)
			set(&t.usage.CacheReadInputTokens, d.CacheReadInputTokens)
			if d.CacheCreation != nil {
				t.usage.CacheCreation.Ephemeral5mInputTokens = d.CacheCreation.Ephemeral5mInputTokens
				t.usage.CacheCreation.Ephemeral1hInputTokens = d.CacheCreation.Ephemeral1hInputTokens
			}
		}
	case "error":
		if ev.Error != nil && ev.Error.Type != "" {
			t.errType = ev.Error.Type
		} else {
			t.errType = "api_error"
		}
	}
}
