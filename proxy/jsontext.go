package proxy

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"github.com/llmfleet/llmfleet/jsonmember"
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

// memberStrings returns every string found in obj at path: each step of
// path names the keys a member may have at that depth (a name's other
// spellings, such as the snake_case one Google's APIs take beside the
// camelCase one, listed beside it), matched regardless of case as
// responseRefs matches them, and every member of one of those keys
// counts, duplicates included: whichever a reader of the body takes, by
// whatever rule of case, is among them. ok is false when obj is not a
// JSON object.
func memberStrings(obj []byte, path ...[]string) (found []string, ok bool) {
	ms, err := jsonmember.Members(obj)
	if err != nil {
		return nil, false
	}
	if len(path) == 0 {
		return nil, true
	}
	for _, m := range ms {
		if !slices.ContainsFunc(path[0], func(k string) bool { return strings.EqualFold(k, m.Key) }) {
			continue
		}
		v := m.Value(obj)
		if len(path) > 1 {
			inner, _ := memberStrings(v, path[1:]...) // not an object: nothing there
			found = append(found, inner...)
			continue
		}
		var s string
		if json.Unmarshal(v, &s) == nil {
			found = append(found, s)
		}
	}
	return found, true
}
