package llmfleet

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// WithoutField returns body, a JSON object, with its top-level member name
// removed. Every other byte is kept as it was: the body is never decoded
// and re-encoded, so unknown fields, key order and number formatting
// survive. body itself is returned when it has no such member.
func WithoutField(body []byte, name string) ([]byte, error) {
	if !bytes.Contains(body, []byte(`"`+name+`"`)) && !bytes.Contains(body, []byte(`\u`)) {
		if !json.Valid(body) || bytes.TrimLeft(body, " \t\r\n")[0] != '{' {
			return nil, errors.New("llmfleet: body is not a JSON object")
		}
		return body, nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("llmfleet: body is not a JSON object")
	}
	first := true
	for dec.More() {
		start := dec.InputOffset() // just after '{' or after the previous value
		k, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		end := dec.InputOffset()
		if k != name {
			first = false
			continue
		}
		if first {
			// Drop the member and the comma after it, if any.
			rest := body[end:]
			i := 0
			for i < len(rest) && isSpace(rest[i]) {
				i++
			}
			if i < len(rest) && rest[i] == ',' {
				end += int64(i + 1)
			}
		} else {
			// Drop the comma before the member and the member.
			i := start
			for i < end && body[i] != ',' {
				i++
			}
			start = i
		}
		out := make([]byte, 0, len(body)-int(end-start))
		out = append(out, body[:start]...)
		out = append(out, body[end:]...)
		return WithoutField(out, name) // a duplicate key would survive otherwise
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("llmfleet: body: %w", err)
	}
	return body, nil
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
