package jsonmember

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"testing"
)

// objectCount counts the objects of b, a valid JSON text, by
// encoding/json's tokens: the reference for Objects.
func objectCount(t *testing.T, b []byte) int {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber() // any number, however large
	n := 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return n
		}
		if err != nil {
			t.Fatalf("tokens of %q: %v", b, err)
		}
		if d, ok := tok.(json.Delim); ok && d == '{' {
			n++
		}
	}
}

func TestObjects(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{`{"a":1}`, []string{`{"a":1}`}},
		{` [ {"a":{"b":[{"c":2}]}} , 3, "x", [] ] `, []string{`{"a":{"b":[{"c":2}]}}`, `{"b":[{"c":2}]}`, `{"c":2}`}},
		{`"{}"`, nil},
		{`[]`, nil},
		{`{}`, []string{`{}`}},
	} {
		var got []string
		Objects([]byte(c.in), func(obj []byte) bool { got = append(got, string(bytes.TrimSpace(obj))); return true })
		if len(got) != len(c.want) {
			t.Fatalf("%s: %q, want %q", c.in, got, c.want)
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Fatalf("%s: %q, want %q", c.in, got, c.want)
			}
		}
	}
	n := 0
	if Objects([]byte(`[{"a":{}},{}]`), func([]byte) bool { n++; return n < 2 }) || n != 2 {
		t.Fatalf("stopped after %d calls", n)
	}
}

// FuzzObjects checks that Objects gives every object of a valid JSON
// text, as many as encoding/json's tokens open, each a valid object.
func FuzzObjects(f *testing.F) {
	for _, s := range []string{`{"a":[{"b":{}}]}`, `[1,{"x":"{"}]`, `"s"`, ` {"k" : [ [ {} ] ] } `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) {
			return
		}
		n := 0
		Objects(b, func(obj []byte) bool {
			if !isObject(obj) {
				t.Fatalf("%q: not an object: %q", b, obj)
			}
			n++
			return true
		})
		if want := objectCount(t, b); n != want {
			t.Fatalf("%q: %d objects, want %d", b, n, want)
		}
		pruned := 0
		ObjectsPruned(b, func([]byte) func([]byte) bool { pruned++; return nil })
		if pruned != n {
			t.Fatalf("%q: ObjectsPruned pruning nothing visited %d objects, Objects %d", b, pruned, n)
		}
	})
}

func TestObjectsPruned(t *testing.T) {
	var got []string
	ObjectsPruned([]byte(`[{"type":"t","input":{"a":{}},"b":[{"c":1}]}]`), func(obj []byte) func([]byte) bool {
		got = append(got, string(obj))
		return func(k []byte) bool { return string(k) == "input" }
	})
	if len(got) != 2 || got[1] != `{"c":1}` {
		t.Fatalf("visited %q", got)
	}
}
