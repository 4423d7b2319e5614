package jsonmember

import (
	"bytes"
	"encoding/json"
	"maps"
	"reflect"
	"testing"
	"unicode/utf8"
)

// isObject reports whether b is a valid JSON object, by encoding/json.
func isObject(b []byte) bool {
	return json.Valid(b) && bytes.TrimLeft(b, " \t\r\n")[0] == '{'
}

// decodeObject decodes b with encoding/json, the reference for what a
// decoder sees in it.
func decodeObject(t *testing.T, b []byte) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("decoding %q: %v", b, err)
	}
	return m
}

// FuzzDelete checks that Delete accepts exactly the valid JSON objects,
// that its result is one, without the member, and that every other member
// keeps its bytes.
func FuzzDelete(f *testing.F) {
	for _, c := range deleteCases {
		f.Add([]byte(c.in), c.key)
	}
	f.Add([]byte(`{"a":1}x`), "a")
	f.Add([]byte(`[{"a":1}]`), "a")
	f.Add([]byte("{\"\xff\":1,\"\\ufffd\":2}"), "\ufffd")
	f.Fuzz(func(t *testing.T, obj []byte, key string) {
		out, err := Delete(obj, key)
		if isObject(obj) != (err == nil) {
			t.Fatalf("Delete(%q): err %v, but valid object: %v", obj, err, isObject(obj))
		}
		if err != nil {
			return
		}
		if !isObject(out) {
			t.Fatalf("Delete(%q, %q) = %q: not a JSON object", obj, key, out)
		}
		want := decodeObject(t, obj)
		_, had := want[key]
		delete(want, key)
		if got := decodeObject(t, out); !maps.EqualFunc(got, want, func(a, b json.RawMessage) bool { return bytes.Equal(a, b) }) {
			t.Fatalf("Delete(%q, %q) = %q: decodes to %q, want %q", obj, key, out, got, want)
		}
		if !had && !bytes.Equal(out, obj) {
			t.Fatalf("Delete(%q, %q) changed a body without the member: %q", obj, key, out)
		}
		before, _ := Members(obj)
		after, err := Members(out)
		if err != nil {
			t.Fatal(err)
		}
		i := 0
		for _, m := range before {
			if m.Key == key {
				continue
			}
			if i >= len(after) || !bytes.Equal(after[i].Text(out), m.Text(obj)) {
				t.Fatalf("Delete(%q, %q) = %q: member %q changed or lost", obj, key, out, m.Text(obj))
			}
			i++
		}
		if i != len(after) {
			t.Fatalf("Delete(%q, %q) = %q: %d members, want %d", obj, key, out, len(after), i)
		}
	})
}

// FuzzReplace checks that Replace sets the value of exactly the members
// named and keeps the rest of the object byte for byte.
func FuzzReplace(f *testing.F) {
	f.Add([]byte(`{"a":1,"b":[2],"c":"3"}`), "b", []byte(`[]`))
	f.Add([]byte(`{ "a" : 1 , "a":2}`), "a", []byte(` null `))
	f.Add([]byte(`{"usage":{"output_tokens":7}}`), "output_tokens", []byte(`1`))
	f.Fuzz(func(t *testing.T, obj []byte, key string, value []byte) {
		ms, err := Members(obj)
		if err != nil || !json.Valid(value) {
			return
		}
		value = bytes.Trim(value, " \t\r\n")
		out := Replace(obj, ms, Edit{key, value})
		got, err := Members(out)
		if err != nil {
			t.Fatalf("Replace(%q, %q, %q) = %q: %v", obj, key, value, out, err)
		}
		if len(got) != len(ms) {
			t.Fatalf("Replace(%q, %q, %q) = %q: %d members, want %d", obj, key, value, out, len(got), len(ms))
		}
		for i, m := range ms {
			want := m.Value(obj)
			if m.Key == key {
				want = value
			}
			if got[i].Key != m.Key || !bytes.Equal(got[i].Value(out), want) {
				t.Fatalf("Replace(%q, %q, %q) = %q: member %d is %q", obj, key, value, out, i, got[i].Text(out))
			}
		}
	})
}

// FuzzElements checks Elements against encoding/json.
func FuzzElements(f *testing.F) {
	f.Add([]byte(` [ 1 ,"a,]", {"b":[2]},[] ,null] `))
	f.Add([]byte(`[]`))
	f.Add([]byte(`[1,]`))
	f.Fuzz(func(t *testing.T, arr []byte) {
		els, err := Elements(arr)
		var want []json.RawMessage
		werr := json.Unmarshal(arr, &want)
		if werr == nil && want == nil {
			werr = ErrNotArray // null decodes to a nil slice
		}
		if (err == nil) != (werr == nil) {
			t.Fatalf("Elements(%q): %v; encoding/json: %v", arr, err, werr)
		}
		if err != nil {
			return
		}
		if len(els) != len(want) {
			t.Fatalf("Elements(%q): %d elements, want %d", arr, len(els), len(want))
		}
		for i := range els {
			if !bytes.Equal(els[i], want[i]) {
				t.Fatalf("Elements(%q)[%d] = %q, want %q", arr, i, els[i], want[i])
			}
		}
	})
}

// Scan gives, for every valid JSON text, what Members gives: the same
// members in the same order, or nothing for a text that is no object.
func FuzzScan(f *testing.F) {
	f.Add([]byte(`{"a":1,"b":[2,{"c":"}"}],"d\"e":"3"}`))
	f.Add([]byte(` { } `))
	f.Add([]byte(`[1]`))
	f.Fuzz(func(t *testing.T, obj []byte) {
		if !json.Valid(obj) {
			return
		}
		ms, err := Members(obj)
		var keys, values [][]byte
		ok := Scan(obj, func(k, v []byte) bool {
			keys, values = append(keys, k), append(values, v)
			return true
		})
		if ok != (err == nil) {
			t.Fatalf("Scan(%q) = %v, Members err %v", obj, ok, err)
		}
		if !ok {
			return
		}
		if len(keys) != len(ms) {
			t.Fatalf("Scan(%q): %d members, Members %d", obj, len(keys), len(ms))
		}
		for i, m := range ms {
			if !bytes.Equal(keys[i], obj[m.Start+1 : m.ValueStart][:len(keys[i])]) || !bytes.Equal(values[i], m.Value(obj)) {
				t.Fatalf("Scan(%q) member %d: %q=%q, Members %+v", obj, i, keys[i], values[i], m)
			}
		}
	})
}

// FuzzSet: Set accepts exactly the valid JSON objects and gives one whose
// member key decodes to the value set, every other member keeping its
// bytes, with one member more only if key was absent.
func FuzzSet(f *testing.F) {
	f.Add([]byte(`{"model":"m","stream":true}`), "service_tier", []byte(`"flex"`))
	f.Add([]byte(`{"service_tier":"auto"}`), "service_tier", []byte(`"flex"`))
	f.Add([]byte(`{ }`), "index", []byte(`0`))
	f.Add([]byte(`{"a":1 } `), "b", []byte(`[1,{"c":null}]`))
	f.Fuzz(func(t *testing.T, obj []byte, key string, value []byte) {
		if !json.Valid(value) || !utf8.ValidString(key) {
			return
		}
		out, err := Set(obj, key, value)
		if !isObject(obj) {
			if err == nil {
				t.Fatalf("Set(%q) accepted a non-object", obj)
			}
			return
		}
		if err != nil {
			t.Fatalf("Set(%q): %v", obj, err)
		}
		before, after := decodeObject(t, obj), decodeObject(t, out)
		var want, got any
		json.Unmarshal(value, &want)
		json.Unmarshal(after[key], &got)
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("Set(%q, %q, %q): member is %s", obj, key, value, after[key])
		}
		for k, v := range before {
			if k != key && !bytes.Equal(after[k], v) {
				t.Fatalf("Set(%q, %q, %q): member %q changed: %s -> %s", obj, key, value, k, v, after[k])
			}
		}
		if _, had := before[key]; len(after) != len(before) && (had || len(after) != len(before)+1) {
			t.Fatalf("Set(%q, %q, %q) = %q: %d members from %d", obj, key, value, out, len(after), len(before))
		}
	})
}
