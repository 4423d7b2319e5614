package jsonmember

import (
	"errors"
	"strings"
	"testing"
)

// deleteCases are Delete's table and the seeds of FuzzDelete.
var deleteCases = []struct{ in, key, want string }{
	{`{"model":"m","stream":true,"x":1.50}`, "stream", `{"model":"m","x":1.50}`},
	{`{"stream":true,"model":"m"}`, "stream", `{"model":"m"}`},
	{`{ "stream" : false , "model":"m"}`, "stream", `{ "model":"m"}`},
	{`{"model":"m", "stream":true}`, "stream", `{"model":"m"}`},
	{`{"stream":true}`, "stream", `{}`},
	{` { "stream" : null } `, "stream", ` {  } `},
	{`{"model":"m","messages":[{"stream":1}],"unknown_field":{"a":[1e3]}}`, "stream", `{"model":"m","messages":[{"stream":1}],"unknown_field":{"a":[1e3]}}`},
	{`{"stream":true,"a":1,"stream":false}`, "stream", `{"a":1}`},
	{`{"a":1,"stream":true,"b":"}","stream":false,"c":[]}`, "stream", `{"a":1,"b":"}","c":[]}`},
	{`{"str\u0065am":true,"a":1}`, "stream", `{"a":1}`},
	{`{"a\"b":1,"c":2}`, `a"b`, `{"c":2}`},
	{"{\n  \"a\": 1,\n  \"b\": 2\n}", "b", "{\n  \"a\": 1\n}"},
	{"{\n  \"a\": 1,\n  \"b\": 2\n}", "a", "{\n  \"b\": 2\n}"},
	{`{}`, "a", `{}`},
	{`{"":0}`, "", `{}`},
}

func TestDelete(t *testing.T) {
	for _, c := range deleteCases {
		got, err := Delete([]byte(c.in), c.key)
		if err != nil || string(got) != c.want {
			t.Errorf("Delete(%s, %q) = %s, %v; want %s", c.in, c.key, got, err, c.want)
		}
	}
	for _, bad := range []string{``, ` `, `[1]`, `"s"`, `{"a":`, `{"stream":true`, `{"a":1}x`, `{"a" 1}`, `{a:1}`, `{"a":1,}`, `nul`} {
		if _, err := Delete([]byte(bad), "stream"); !errors.Is(err, ErrNotObject) {
			t.Errorf("Delete(%q): %v, want ErrNotObject", bad, err)
		}
	}
}

func TestDeleteKeepsBodyWithoutMember(t *testing.T) {
	in := []byte(`{"a":1}`)
	if got, _ := Delete(in, "b"); &got[0] != &in[0] {
		t.Error("Delete copied a body it did not change")
	}
}

func TestMembers(t *testing.T) {
	obj := []byte(` {"a" : [1, {"b":"]"}] ,"k\u00e9y":"v\"","n":-1.5e3, "t":true,"o":{}} `)
	ms, err := Members(obj)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ key, value string }{
		{"a", `[1, {"b":"]"}]`}, {"kéy", `"v\""`}, {"n", `-1.5e3`}, {"t", `true`}, {"o", `{}`},
	}
	if len(ms) != len(want) {
		t.Fatalf("%d members, want %d", len(ms), len(want))
	}
	for i, w := range want {
		if ms[i].Key != w.key || string(ms[i].Value(obj)) != w.value {
			t.Errorf("member %d: %q = %s, want %q = %s", i, ms[i].Key, ms[i].Value(obj), w.key, w.value)
		}
	}
	if got := string(ms[0].Text(obj)); got != `"a" : [1, {"b":"]"}]` {
		t.Errorf("Text = %s", got)
	}
	if m, ok := Find(ms, "n"); !ok || string(m.Value(obj)) != "-1.5e3" {
		t.Errorf("Find n: %v %v", m, ok)
	}
	if _, ok := Find(ms, "x"); ok {
		t.Error("Find x: found")
	}
	dup := []byte(`{"a":1,"a":2}`)
	ms, _ = Members(dup)
	if m, _ := Find(ms, "a"); string(m.Value(dup)) != "2" {
		t.Errorf("Find gives %s, want the last member", m.Value(dup))
	}
}

func TestReplace(t *testing.T) {
	cases := []struct {
		in    string
		edits []Edit
		want  string
	}{
		{`{"a":1,"b":[2],"c":"3"}`, []Edit{{"b", []byte(`[]`)}}, `{"a":1,"b":[],"c":"3"}`},
		{`{ "a" : 1 , "b":2}`, []Edit{{"a", []byte(`null`)}, {"x", []byte(`0`)}}, `{ "a" : null , "b":2}`},
		{`{"a":1,"a":2}`, []Edit{{"a", []byte(`3`)}}, `{"a":3,"a":3}`},
		{`{"a":1}`, []Edit{{"a", []byte(`2`)}, {"a", []byte(`3`)}}, `{"a":2}`},
		{`{}`, []Edit{{"a", []byte(`2`)}}, `{}`},
	}
	for _, c := range cases {
		ms, err := Members([]byte(c.in))
		if err != nil {
			t.Fatal(err)
		}
		if got := string(Replace([]byte(c.in), ms, c.edits...)); got != c.want {
			t.Errorf("Replace(%s) = %s, want %s", c.in, got, c.want)
		}
	}
}

func TestElements(t *testing.T) {
	els, err := Elements([]byte(` [ 1 ,"a,]", {"b":[2]},[] ,null] `))
	if err != nil {
		t.Fatal(err)
	}
	got := make([]string, len(els))
	for i, e := range els {
		got[i] = string(e)
	}
	if s := strings.Join(got, "|"); s != `1|"a,]"|{"b":[2]}|[]|null` {
		t.Errorf("Elements = %s", s)
	}
	if els, err := Elements([]byte(`[]`)); err != nil || len(els) != 0 {
		t.Errorf("Elements([]) = %q, %v", els, err)
	}
	for _, bad := range []string{``, `{}`, `[1,]`, `[1`, `1`} {
		if _, err := Elements([]byte(bad)); !errors.Is(err, ErrNotArray) {
			t.Errorf("Elements(%q): %v", bad, err)
		}
	}
}
