package proxy

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"
)

// FuzzMemberStrings: memberStrings takes a body for an object exactly
// when encoding/json does, and the string encoding/json reads at a key,
// which it matches regardless of case and takes the last of, is among
// those memberStrings finds.
func FuzzMemberStrings(f *testing.F) {
	for _, s := range []string{`{"input_file_id":"file-a"}`, `{"input_file_id":0,"input_file_id":"file-b"}`,
		`{"batch":{"input_config":{"file_name":"files/a"}}}`, `{"batch":{"inputConfig":{"fileName":"files/a"},"input_config":{"file_name":"files/b"}}}`,
		`["input_file_id"]`, `{"batch":[]}`, `{"inp\u0075t_file_id":"file-c"}`, `{"INPUT_FILE_ID":"file-d"}`, ``} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		ids, ok := memberStrings(body, []string{"input_file_id"})
		var obj map[string]json.RawMessage
		isObj := json.Unmarshal(body, &obj) == nil && bytes.HasPrefix(bytes.TrimLeft(body, " \t\r\n"), []byte("{"))
		if ok != isObj {
			t.Fatalf("%q: ok %v, encoding/json reads an object: %v", body, ok, isObj)
		}
		var flat struct {
			ID string `json:"input_file_id"`
		}
		if ok && json.Unmarshal(body, &flat) == nil && flat.ID != "" && !slices.Contains(ids, flat.ID) {
			t.Errorf("%q: input_file_id %q not among %q", body, flat.ID, ids)
		}
		memberStrings(body, []string{"batch"}, []string{"inputConfig", "input_config"}, []string{"fileName", "file_name"})
	})
}
