package proxy

import (
	"bytes"
	"encoding/json"
)

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
