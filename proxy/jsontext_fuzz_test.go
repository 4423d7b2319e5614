package proxy

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// FuzzMemberStrings: memberStrings takes a body for an object exactly
// when encoding/json does, and of an object whose keys are unique and
// spelled one way, finds the string encoding/json reads at a key.
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
		if ok && plainKeys(body) && json.Unmarshal(body, &flat) == nil && flat.ID != "" && !slices.Contains(ids, flat.ID) {
			t.Errorf("%q: input_file_id %q not among %q", body, flat.ID, ids)
		}
		memberStrings(body, []string{"batch"}, []string{"inputConfig", "input_config"}, []string{"fileName", "file_name"})
	})
}

// plainKeys reports whether an object's top-level keys are unique, no
// two alike but for case, and none but input_file_id itself read as it
// (encoding/json matches keys without case).
func plainKeys(obj []byte) bool {
	d := json.NewDecoder(bytes.NewReader(obj))
	if _, err := d.Token(); err != nil {
		return false
	}
	seen := map[string]bool{}
	for d.More() {
		k, err := d.Token()
		if err != nil {
			return false
		}
		key := strings.ToLower(k.(string))
		if seen[key] || k != "input_file_id" && readsAsInputFileID(k.(string)) {
			return false
		}
		seen[key] = true
		var v json.RawMessage
		if d.Decode(&v) != nil {
			return false
		}
	}
	return true
}

// readsAsInputFileID reports whether encoding/json reads a member of key
// k as input_file_id.
func readsAsInputFileID(k string) bool {
	var v struct {
		ID string `json:"input_file_id"`
	}
	obj, _ := json.Marshal(map[string]string{k: "x"})
	return json.Unmarshal(obj, &v) == nil && v.ID == "x"
}
