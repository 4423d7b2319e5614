package jsonmember

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestRequote(t *testing.T) {
	for _, c := range []struct {
		in, want string
		ok       bool
	}{
		{`{"a": 'b'}`, `{"a": "b"}`, true},
		{`{'file': {'display_name': 'notes'}}`, `{"file": {"display_name": "notes"}}`, true},
		{`{'a': 'it\'s "x"'}`, `{"a": "it's \"x\""}`, true},
		{`{"a": "it's"}`, `{"a": "it's"}`, true},
		{`{'a': 'b\n'}`, `{"a": "b\n"}`, true},
		{`{'a': 'b}`, ``, false},
		{`{'a': b}`, ``, false},
		{`{"a": 1}`, `{"a": 1}`, true},
	} {
		got, ok := Requote([]byte(c.in))
		if ok != c.ok || ok && string(got) != c.want {
			t.Errorf("Requote(%s) = %s, %v, want %s, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

// FuzzRequote: what Requote accepts is valid JSON; a valid JSON text is
// its own requoting.
func FuzzRequote(f *testing.F) {
	for _, s := range []string{`{'a': 'b'}`, `{"a": "it's"}`, `{'a': 'x\'y"z'}`, `['\u0041', "\\'"]`, `'`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		out, ok := Requote(b)
		if ok && !json.Valid(out) {
			t.Fatalf("Requote(%q) = %q, not valid JSON", b, out)
		}
		if json.Valid(b) && (!ok || !bytes.Equal(out, b)) {
			t.Fatalf("Requote(%q) = %q, %v: a valid JSON text changed", b, out, ok)
		}
	})
}
