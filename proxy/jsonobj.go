package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
)

// member is one top-level member of a JSON object, located by byte offsets
// into the object's text so that it can be replaced or cut out without
// decoding and re-encoding anything else.
type member struct {
	key        string
	start      int // offset of the key's opening quote
	valueStart int // offset of the value's first byte
	end        int // offset just after the value
}

func (m member) value(obj []byte) []byte { return obj[m.valueStart:m.end] }

var errNotObject = errors.New("not a JSON object")

// objectMembers returns the members of obj, a JSON object, in order. obj
// must be valid JSON (json.Valid); anything else yields an error.
func objectMembers(obj []byte) ([]member, error) {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return nil, errNotObject
	}
	i = skipSpace(obj, i+1)
	var ms []member
	if i < len(obj) && obj[i] == '}' {
		return ms, nil
	}
	for i < len(obj) {
		if obj[i] != '"' {
			return nil, errNotObject
		}
		ks := i
		ke := skipString(obj, i)
		var key string
		if bytes.IndexByte(obj[ks+1:ke-1], '\\') < 0 {
			key = string(obj[ks+1 : ke-1])
		} else if err := json.Unmarshal(obj[ks:ke], &key); err != nil {
			return nil, err
		}
		i = skipSpace(obj, ke)
		if i >= len(obj) || obj[i] != ':' {
			return nil, errNotObject
		}
		vs := skipSpace(obj, i+1)
		ve := skipValue(obj, vs)
		if ve <= vs {
			return nil, errNotObject
		}
		ms = append(ms, member{key: key, start: ks, valueStart: vs, end: ve})
		i = skipSpace(obj, ve)
		if i >= len(obj) {
			return nil, errNotObject
		}
		if obj[i] == '}' {
			return ms, nil
		}
		if obj[i] != ',' {
			return nil, errNotObject
		}
		i = skipSpace(obj, i+1)
	}
	return nil, errNotObject
}

// find returns the last member named key (the one a JSON decoder keeps).
func find(ms []member, key string) (member, bool) {
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].key == key {
			return ms[i], true
		}
	}
	return member{}, false
}

// edit is one replacement of a member's value.
type edit struct {
	key   string
	value []byte
}

// withValues returns a copy of obj in which the value of each member named
// in edits is replaced; members that obj lacks are left absent. Every other
// byte of obj is kept.
func withValues(obj []byte, ms []member, edits ...edit) []byte {
	out := make([]byte, 0, len(obj))
	last := 0
	for _, m := range ms {
		for _, e := range edits {
			if e.key == m.key {
				out = append(out, obj[last:m.valueStart]...)
				out = append(out, e.value...)
				last = m.end
				break
			}
		}
	}
	return append(out, obj[last:]...)
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the offset just after the string starting at b[i].
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b)
}

// skipValue returns the offset just after the JSON value starting at b[i].
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = skipString(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return len(b)
	default:
		for ; i < len(b); i++ {
			switch b[i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return i
			}
		}
		return i
	}
}

// arrayElements returns the elements of arr, a valid JSON array.
func arrayElements(arr []byte) ([][]byte, error) {
	i := skipSpace(arr, 0)
	if i >= len(arr) || arr[i] != '[' {
		return nil, errors.New("not a JSON array")
	}
	i = skipSpace(arr, i+1)
	var els [][]byte
	if i < len(arr) && arr[i] == ']' {
		return els, nil
	}
	for i < len(arr) {
		e := skipValue(arr, i)
		if e <= i {
			break
		}
		els = append(els, arr[i:e])
		i = skipSpace(arr, e)
		if i >= len(arr) {
			break
		}
		if arr[i] == ']' {
			return els, nil
		}
		if arr[i] != ',' {
			break
		}
		i = skipSpace(arr, i+1)
	}
	return nil, errors.New("not a JSON array")
}

// compactJSON returns b without insignificant whitespace, as one line.
func compactJSON(b []byte) []byte {
	if bytes.IndexAny(b, "\n\r") < 0 {
		return b
	}
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return b
	}
	return buf.Bytes()
}

// jsonString returns s as a JSON string, leaving <, > and & literal as the
// API does.
func jsonString(s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}
