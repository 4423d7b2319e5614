package proxy

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/jsonmember"
)

// The readers below decode the few values the taps keep (a usage object,
// a model string) without encoding/json's reflection and allocations in
// the common case: plain lowercase keys, integer or null counts, a string
// without escapes. Whatever they are not sure of (escaped or mixed-case
// keys, which encoding/json matches case-insensitively; numbers with a
// fraction; values of another type) falls back to json.Unmarshal, so that
// the result is always what json.Unmarshal gives.

// decodeUsage reads a raw usage object as json.Unmarshal into a zero
// llmfleet.Usage would.
func decodeUsage(raw []byte) llmfleet.Usage {
	if !json.Valid(raw) {
		return llmfleet.Usage{} // json.Unmarshal sets nothing in an invalid text
	}
	return decodeValidUsage(raw)
}

// decodeValidUsage is decodeUsage of raw known to be valid JSON.
func decodeValidUsage(raw []byte) llmfleet.Usage {
	var u llmfleet.Usage
	if fastUsage(raw, &u) {
		return u
	}
	// A variable of its own, so that u stays off the heap on the fast
	// path.
	var slow llmfleet.Usage
	_ = json.Unmarshal(raw, &slow)
	return slow
}

// decodeString reads a raw JSON value as json.Unmarshal into a string
// would.
func decodeString(raw []byte) string {
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' {
		in := raw[1 : len(raw)-1]
		plain := true
		for _, c := range in {
			if c < 0x20 || c == '"' || c == '\\' {
				plain = false
				break
			}
		}
		if plain && utf8.Valid(in) {
			return string(in)
		}
	}
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}

// fastUsage reads raw, a valid JSON text, into u; false means it could
// not be sure and u must be read again by encoding/json.
func fastUsage(raw []byte, u *llmfleet.Usage) bool {
	return fastObject(raw, func(key, val []byte) bool {
		switch string(key) {
		case "input_tokens":
			return fastInt(val, &u.InputTokens)
		case "output_tokens":
			return fastInt(val, &u.OutputTokens)
		case "cache_creation_input_tokens":
			return fastInt(val, &u.CacheCreationInputTokens)
		case "cache_read_input_tokens":
			return fastInt(val, &u.CacheReadInputTokens)
		case "cache_creation":
			if string(val) == "null" {
				return true
			}
			cc := &u.CacheCreation
			return fastObject(val, func(key, val []byte) bool {
				switch string(key) {
				case "ephemeral_5m_input_tokens":
					return fastInt(val, &cc.Ephemeral5mInputTokens)
				case "ephemeral_1h_input_tokens":
					return fastInt(val, &cc.Ephemeral1hInputTokens)
				}
				return otherKey(key)
			})
		}
		return otherKey(key)
	})
}

// otherKey reports whether key, a member name that is none of those
// looked for, surely matches none of them for encoding/json: it is
// plain lowercase ASCII, so no case folding can make it one of them.
func otherKey(key []byte) bool {
	for _, c := range key {
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// fastInt reads val, a valid JSON value, into *dst as an int64 field;
// null leaves it. False means it is no plain integer.
func fastInt(val []byte, dst *int64) bool {
	if string(val) == "null" {
		return true
	}
	if bytes.ContainsAny(val, ".eE\"[{tf") {
		return false
	}
	n, err := strconv.ParseInt(string(val), 10, 64)
	if err != nil {
		return false
	}
	*dst = n
	return true
}

// fastObject calls member with the raw key (without its quotes) and the
// raw value of each member of obj, a valid JSON text, in order, and
// reports whether obj is an object whose keys have no escapes and for
// which every call returned true.
func fastObject(obj []byte, member func(key, val []byte) bool) bool {
	return jsonmember.Scan(obj, func(key, val []byte) bool {
		return bytes.IndexByte(key, '\\') < 0 && member(key, val)
	})
}
