package proxy

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzLastMember checks that lastMember finds only whole JSON values, and
// in a JSON array of objects the value of the last one's member of its
// key.
func FuzzLastMember(f *testing.F) {
	for _, s := range []string{`[{"usageMetadata":{"a":1}},{"usageMetadata":{"a":2}}]`, `"usageMetadata": {`, `{"usageMetadata":"x"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v := lastMember(b, "usageMetadata")
		if v != nil && !json.Valid(v) {
			t.Fatalf("%q: not a JSON value: %q", b, v)
		}
		var chunks []json.RawMessage
		if bytes.ContainsRune(b, '\\') || json.Unmarshal(b, &chunks) != nil || len(chunks) == 0 {
			return // (an escape may spell the key, or hide it in a string)
		}
		last := chunks[len(chunks)-1]
		var members map[string]json.RawMessage
		if bytes.Count(last, []byte(`"usageMetadata"`)) > 1 || json.Unmarshal(last, &members) != nil {
			return // the key again deeper in the chunk: that one may be last
		}
		want, ok := members["usageMetadata"]
		if ok && (v == nil || string(compactJSON(v)) != string(compactJSON(want))) {
			t.Fatalf("%q: %q, want %q", b, v, want)
		}
	})
}
