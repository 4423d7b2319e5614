package jsonmember

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// MaxTapped bounds what a Tap keeps of one member: a longer value is
// skipped, as if the member were not asked for.
const MaxTapped = 1 << 20

// Tap reads a JSON object written to it in pieces of any size, like a
// response body passing by, and keeps the raw values of the top-level
// members named Keys, without holding the rest: the push form of Scan.
// Keys are compared as Scan's callers compare them, after unescaping;
// where a key is repeated, the last member is kept. A text that is no
// valid object gives whatever the members it seemed to have were, and
// never fails.
//
// A zero Tap with Keys set is ready to use. The short values of the usual
// answers are kept without an allocation of their own.
type Tap struct {
	// Keys names the members kept (at most 8). Set it before the first
	// Write and leave it.
	Keys []string

	depth     int
	inStr     bool
	esc       bool
	key       []byte // the string being read at depth 1, raw, up to keyMax bytes
	keyMax    int    // the longest a key of Keys can be, escaped
	keyLong   bool
	lastKey   int  // 1 + the index in Keys of the key the last string completed at depth 1, or 0
	expect    bool // a ':' at depth 1 was seen: a value comes next
	capturing int  // 1 + the index of the member whose value is being kept, or 0
	val       []byte
	kept      [8][]byte // the values kept, by index in Keys; they point into store
	store     []byte

	// Room for the usual sizes of what is kept.
	keyBuf   [64]byte
	valBuf   [512]byte
	storeBuf [640]byte
}

// Value returns the raw value of the last member named Keys[i] read so
// far, or nil if there was none (or it was too long to keep).
func (t *Tap) Value(i int) []byte { return t.kept[i] }

// Write reads p. It never fails.
func (t *Tap) Write(p []byte) (int, error) {
	for i := 0; i < len(p); i++ {
		switch {
		case t.capturing == 0 && t.depth > 1:
			i = t.skip(p, i)
		case !t.esc && !t.expect:
			i = t.run(p, i)
		default:
			t.readByte(p[i])
		}
	}
	return len(p), nil
}

// skip reads p from i deep inside a member not kept, where only the bytes
// that open or close a string or a bracket matter, and in a string only
// its quote and escapes. It returns the index of the last byte read.
func (t *Tap) skip(p []byte, i int) int {
	if t.esc {
		t.esc = false
		return i
	}
	lo, hi := uint64(skipStopsLo), uint64(skipStopsHi)
	if t.inStr {
		lo, hi = strStopsLo, strStopsHi
	}
	j := indexStop(p[i:], lo, hi)
	if j < 0 {
		return len(p)
	}
	t.skipByte(p[i+j])
	return i + j
}

// run reads p from i where the bytes up to the next one that can change
// the state need only be kept: those of a key at depth 1, of a value kept.
// It returns the index of the last byte read.
func (t *Tap) run(p []byte, i int) int {
	lo, hi := uint64(runStopsLo), uint64(runStopsHi)
	if t.inStr {
		lo, hi = strStopsLo, strStopsHi
	}
	j := indexStop(p[i:], lo, hi)
	if j < 0 {
		j = len(p) - i
	}
	r := p[i : i+j]
	if t.inStr && t.depth == 1 && !t.keyLong {
		if t.key == nil {
			t.key = t.keyBuf[:0]
		}
		if room := t.maxKey() - len(t.key); len(r) > room {
			t.key, t.keyLong = append(t.key, r[:room]...), true
		} else {
			t.key = append(t.key, r...)
		}
	}
	if t.capturing != 0 {
		if room := MaxTapped - len(t.val); len(r) > room {
			t.val = append(t.val, r[:room]...)
			t.capturing = 0 // too large to be kept
		} else {
			t.val = append(t.val, r...)
		}
	}
	if i+j == len(p) {
		return len(p)
	}
	t.readByte(p[i+j])
	return i + j
}

// The bytes Write stops at, as sets of the bytes 0 to 63 (lo) and 64 to
// 127 (hi): in a string, its quote and a backslash; deep inside a member
// not kept, a quote or a bracket; where keys and values are read, those
// and ',' and ':'.
const (
	strStopsLo  = 1 << '"'
	strStopsHi  = 1 << ('\\' - 64)
	skipStopsLo = 1 << '"'
	skipStopsHi = 1<<('{'-64) | 1<<('}'-64) | 1<<('['-64) | 1<<(']'-64)
	runStopsLo  = skipStopsLo | 1<<',' | 1<<':'
	runStopsHi  = skipStopsHi
)

// indexStop returns the index of the first byte of p in the set lo, hi,
// or -1: bytes.IndexAny's answer, without making its set at every call.
func indexStop(p []byte, lo, hi uint64) int {
	for i, c := range p {
		if c < 64 {
			if lo&(1<<c) != 0 {
				return i
			}
		} else if c < 128 && hi&(1<<(c-64)) != 0 {
			return i
		}
	}
	return -1
}

// skipByte reads c, one of the bytes Write stops at deep inside a member
// not kept.
func (t *Tap) skipByte(c byte) {
	switch {
	case t.inStr && c == '\\':
		t.esc = true
	case t.inStr: // its closing quote
		t.inStr = false
	case c == '"':
		if t.key == nil {
			t.key = t.keyBuf[:0]
		}
		t.inStr, t.key, t.keyLong, t.lastKey = true, t.key[:0], false, 0
	case c == '{' || c == '[':
		t.depth++
	default: // '}' or ']', which leave depth at 1 or more
		t.depth--
	}
}

// readByte reads one byte c.
func (t *Tap) readByte(c byte) {
	if t.expect && t.depth == 1 && !t.inStr && c != ' ' && c != '\t' && c != '\n' && c != '\r' {
		t.expect = false
		if t.lastKey != 0 {
			if t.val == nil {
				t.val = t.valBuf[:0]
			}
			t.capturing, t.val = t.lastKey, t.val[:0]
		}
	}
	if t.capturing != 0 {
		if len(t.val) < MaxTapped {
			t.val = append(t.val, c)
		} else {
			t.capturing = 0 // too large to be kept
		}
	}
	if t.inStr {
		t.stringByte(c)
		return
	}
	switch c {
	case '"':
		if t.key == nil {
			t.key = t.keyBuf[:0]
		}
		t.inStr, t.key, t.keyLong, t.lastKey = true, t.key[:0], false, 0
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

// stringByte reads byte c of a string.
func (t *Tap) stringByte(c byte) {
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
			t.lastKey = t.indexOf(t.key)
		}
	case t.depth == 1:
		if len(t.key) < t.maxKey() {
			t.key = append(t.key, c)
		} else {
			t.keyLong = true
		}
	}
}

// maxKey returns the longest raw key that can name one of Keys: every
// character escaped as \uXXXX.
func (t *Tap) maxKey() int {
	if t.keyMax == 0 {
		for _, k := range t.Keys {
			t.keyMax = max(t.keyMax, 6*len(k))
		}
		t.keyMax = max(t.keyMax, 1)
	}
	return t.keyMax
}

// indexOf returns 1 + the index in Keys of the key whose raw text is raw,
// or 0.
func (t *Tap) indexOf(raw []byte) int {
	raw = Key(raw)
	for i, k := range t.Keys[:min(len(t.Keys), len(t.kept))] {
		if string(raw) == k {
			return i + 1
		}
	}
	return 0
}

// endValue ends the value being kept at the ',' or '}' just appended.
func (t *Tap) endValue() {
	if t.capturing == 0 {
		return
	}
	v := bytes.TrimSpace(t.val[:len(t.val)-1])
	if t.store == nil {
		t.store = t.storeBuf[:0]
	}
	start := len(t.store)
	t.store = append(t.store, v...)
	t.kept[t.capturing-1] = t.store[start:len(t.store):len(t.store)]
	t.capturing = 0
}

// KeyText returns the text of a raw key as Scan gives it (the bytes
// between its quotes, escapes as they are), as a JSON decoder reads it.
func KeyText(raw []byte) string { return string(Key(raw)) }

// Key is KeyText without a copy of a plain key: raw itself when it has
// no escape and is valid UTF-8, else its decoded text. Compare a key
// Scan gives with the one a decoder would read through it.
func Key(raw []byte) []byte {
	if bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		return raw
	}
	var s string
	_ = json.Unmarshal(append(append([]byte{'"'}, raw...), '"'), &s)
	return []byte(s)
}
