package jsonmember

import (
	"bytes"
	"encoding/json"
)

// Requote returns b, a JSON text whose strings may be in single quotes
// (as Google's JSON reader takes them: {'file': {'display_name': 'x'}}),
// with those strings in double quotes, and whether the result is a valid
// JSON text. A string in double quotes is left as it is; in one in single
// quotes, a double quote is escaped and \' is a single quote. Whoever
// reads the result reads what a reader of the strict form does, so a
// caller that checks the result passes on the result, not b.
func Requote(b []byte) ([]byte, bool) {
	if bytes.IndexByte(b, '\'') < 0 {
		return b, json.Valid(b)
	}
	out := make([]byte, 0, len(b)+8)
	for i := 0; i < len(b); i++ {
		switch c := b[i]; c {
		case '"':
			end := skipString(b, i)
			out = append(out, b[i:end]...)
			i = end - 1
		case '\'':
			var ok bool
			if out, i, ok = requoted(out, b, i); !ok {
				return nil, false
			}
		default:
			out = append(out, c)
		}
	}
	return out, json.Valid(out)
}

// requoted appends the string in single quotes at b[i] to out in double
// quotes, and returns out and the offset of its closing quote; false if
// it has none.
func requoted(out, b []byte, i int) ([]byte, int, bool) {
	out = append(out, '"')
	for i++; i < len(b); i++ {
		switch c := b[i]; c {
		case '\'':
			return append(out, '"'), i, true
		case '"':
			out = append(out, '\\', '"')
		case '\\':
			if i+1 >= len(b) {
				return out, i, false
			}
			if i++; b[i] == '\'' {
				out = append(out, '\'')
			} else {
				out = append(out, '\\', b[i])
			}
		default:
			out = append(out, c)
		}
	}
	return out, i, false
}
