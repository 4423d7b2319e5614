// Package jsonmember reads and edits the top-level members of a raw JSON
// object without decoding and re-encoding anything else: every byte
// outside the members touched (unknown fields, key order, whitespace,
// number formatting) is kept as it was.
//
// Keys are compared after JSON unescaping, as a JSON decoder compares
// them, so "str\u0065am" is the member "stream". Where a key is repeated,
// lookups give the last member, the one a decoder keeps; edits apply to
// every member of the name.
package jsonmember

import (
	"encoding/json"
	"errors"
)

// ErrNotObject is returned for a text that is not a valid JSON object.
var ErrNotObject = errors.New("jsonmember: not a JSON object")

// ErrNotArray is returned for a text that is not a valid JSON array.
var ErrNotArray = errors.New("jsonmember: not a JSON array")

// Member is one top-level member of a JSON object, located by byte
// offsets into the object's text.
type Member struct {
	Key        string // the key, unescaped
	Start      int    // offset of the key's opening quote
	ValueStart int    // offset of the value's first byte
	End        int    // offset just after the value
}

// Value returns the member's raw value in obj, the object it was read
// from.
func (m Member) Value(obj []byte) []byte { return obj[m.ValueStart:m.End] }

// Text returns the member's raw text in obj, from its key's opening quote
// to the end of its value.
func (m Member) Text(obj []byte) []byte { return obj[m.Start:m.End] }

// Members returns the members of obj, in order. obj must be a valid JSON
// object, with white space around it allowed; anything else gives
// ErrNotObject.
func Members(obj []byte) ([]Member, error) {
	if !json.Valid(obj) {
		return nil, ErrNotObject
	}
	ms := []Member{}
	if !walk(obj, func(ks, ke, vs, ve int) bool {
		ms = append(ms, Member{Key: unquote(obj[ks:ke]), Start: ks, ValueStart: vs, End: ve})
		return true
	}) {
		return nil, ErrNotObject
	}
	return ms, nil
}

// Scan calls member with the raw key (the text between its quotes,
// escapes as they are) and the raw value of each member of obj, in order,
// while member returns true, and reports whether every call did. obj must
// be a valid JSON text (json.Valid; Scan does not check it, so that a
// caller that has checked pays once): an object gives its members, any
// other value false. Unlike Members, it allocates nothing.
func Scan(obj []byte, member func(key, value []byte) bool) bool {
	return walk(obj, func(ks, ke, vs, ve int) bool { return member(obj[ks+1:ke-1], obj[vs:ve]) })
}

// walk calls fn with the offsets of each member of obj, a valid JSON
// text, in order: its key's quotes at ks and ke-1, its value in [vs, ve).
// It reports false if obj is no object or fn returned false.
func walk(obj []byte, fn func(ks, ke, vs, ve int) bool) bool {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return false
	}
	i = skipSpace(obj, i+1)
	if obj[i] == '}' {
		return true
	}
	for {
		ks, ke := i, skipString(obj, i)
		i = skipSpace(obj, ke)    // at ':'
		vs := skipSpace(obj, i+1) // the value
		ve := skipValue(obj, vs)
		if !fn(ks, ke, vs, ve) {
			return false
		}
		i = skipSpace(obj, ve) // at ',' or '}'
		if obj[i] == '}' {
			return true
		}
		i = skipSpace(obj, i+1)
	}
}

// Find returns the last member of ms named key.
func Find(ms []Member, key string) (Member, bool) {
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].Key == key {
			return ms[i], true
		}
	}
	return Member{}, false
}

// Elements returns the raw elements of arr, a valid JSON array, in order;
// anything else gives ErrNotArray.
func Elements(arr []byte) ([][]byte, error) {
	if !json.Valid(arr) {
		return nil, ErrNotArray
	}
	i := skipSpace(arr, 0)
	if arr[i] != '[' {
		return nil, ErrNotArray
	}
	i = skipSpace(arr, i+1)
	els := [][]byte{}
	if arr[i] == ']' {
		return els, nil
	}
	for {
		e := skipValue(arr, i)
		els = append(els, arr[i:e])
		i = skipSpace(arr, e) // at ',' or ']'
		if arr[i] == ']' {
			return els, nil
		}
		i = skipSpace(arr, i+1)
	}
}

// unquote returns the text of s, a valid JSON string with its quotes.
func unquote(s []byte) string { return KeyText(s[1 : len(s)-1]) }

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

// skipValue returns the offset just after the valid JSON value starting
// at b[i].
func skipValue(b []byte, i int) int {
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
				if depth--; depth == 0 {
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
