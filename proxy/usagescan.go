package proxy

import (
	"encoding/json"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/jsonmember"
	"github.com/llmfleet/llmfleet/sse"
)

// The scanners below read a response as it streams by, in pieces of any
// size, and keep only what the ledger needs. Neither holds the response:
// the JSON scanner keeps a few top-level members, the event scanner the
// data line of the few events that carry usage.

// maxKept bounds what a scanner keeps of one member or one event; larger
// ones are skipped.
const maxKept = jsonmember.MaxTapped

// jsonTap scans a JSON object and keeps the raw values of its top-level
// members "model", "usage" and "error": enough to read a Message's usage
// or an error envelope's type.
type jsonTap struct{ tap jsonmember.Tap }

// tappedKeys are the members the JSON tap keeps, in the order of their
// indexes.
var tappedKeys = []string{"model", "usage", "error"}

// write scans p.
func (t *jsonTap) write(p []byte) {
	if t.tap.Keys == nil {
		t.tap.Keys = tappedKeys
	}
	t.tap.Write(p)
}

// result decodes what was kept: the model, the usage and, for an error
// envelope, the error type.
func (t *jsonTap) result() (model string, u llmfleet.Usage, errType string) {
	if m := t.tap.Value(0); m != nil {
		model = decodeString(m)
	}
	if us := t.tap.Value(1); us != nil {
		u = decodeUsage(us)
	}
	if raw := t.tap.Value(2); raw != nil {
		errType = decodeErrorType(raw)
	}
	return model, u, errType
}

// decodeErrorType reads the type of a raw error object, as json.Unmarshal
// would.
func decodeErrorType(raw []byte) string {
	var e struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(raw, &e)
	return e.Type
}

// readAnswer reads what a jsonTap would of body, a whole answer of at most
// maxKept bytes (the tap skips a longer member; this does not): a valid
// JSON text by one pass of encoding/json's check and one of its top-level
// members, without the tap's state kept byte by byte; anything else by a
// jsonTap.
func readAnswer(body []byte) (model string, u llmfleet.Usage, errType string) {
	if !json.Valid(body) {
		var t jsonTap
		t.write(body)
		return t.result()
	}
	var kept [3][]byte // the last member of each of tappedKeys
	jsonmember.Scan(body, func(key, val []byte) bool {
		key = jsonmember.Key(key) // as the tap compares keys
		for i, k := range tappedKeys {
			if string(key) == k {
				kept[i] = val
			}
		}
		return true
	})
	if kept[0] != nil {
		model = decodeString(kept[0])
	}
	if kept[1] != nil {
		u = decodeValidUsage(kept[1])
	}
	if kept[2] != nil {
		errType = decodeErrorType(kept[2])
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
	// final says a message_delta gave the output's count; until then
	// the usage's output is message_start's, not the count of what was
	// generated (estimatedOutput).
	final bool
	// bytes and deltas count the stream's bytes and content_block_delta
	// events, for estimatedOutput.
	bytes, deltas int64
}

// write scans p.
func (t *sseTap) write(p []byte) {
	if t.d.Emit == nil {
		t.d = sse.Decoder{Emit: t.event, Keep: t.keep, MaxData: maxKept}
	}
	t.bytes += int64(len(p))
	t.d.Write(p)
}

// keep is keptEvent, counting the deltas as they come.
func (t *sseTap) keep(name string) bool {
	if name == "content_block_delta" {
		t.deltas++
	}
	return keptEvent(name)
}

// deltaFrame is about the bytes of a content_block_delta event beside the
// text, thinking or JSON it carries.
const deltaFrame = 114

// estimatedOutput estimates the output tokens of a stream that ended
// before a message_delta counted them: a token for each 4 bytes of what
// its deltas carried (its bytes less their frames), and at least one a
// delta.
func (t *sseTap) estimatedOutput() int64 {
	return max(t.deltas, (t.bytes-t.deltas*deltaFrame)/4)
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
			t.final = t.final || d.OutputTokens != nil
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
