package llmfleet

import (
	"encoding/json"
	"testing"
)

func TestWithoutField(t *testing.T) {
	cases := []struct{ in, want string }{
		{`{"model":"m","stream":true,"x":1.50}`, `{"model":"m","x":1.50}`},
		{`{"stream":true,"model":"m"}`, `{"model":"m"}`},
		{`{ "stream" : false , "model":"m"}`, `{  "model":"m"}`},
		{`{"model":"m", "stream":true}`, `{"model":"m"}`},
		{`{"stream":true}`, `{}`},
		{`{"model":"m","messages":[{"stream":1}],"unknown_field":{"a":[1e3]}}`, `{"model":"m","messages":[{"stream":1}],"unknown_field":{"a":[1e3]}}`},
		{`{"stream":true,"a":1,"stream":false}`, `{"a":1}`},
		{`{"str\u0065am":true,"a":1}`, `{"a":1}`},
	}
	for _, c := range cases {
		got, err := WithoutField([]byte(c.in), "stream")
		if err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		if string(got) != c.want {
			t.Errorf("WithoutField(%s) = %s, want %s", c.in, got, c.want)
		}
		if !json.Valid(got) {
			t.Errorf("invalid JSON %s", got)
		}
	}
	for _, bad := range []string{`[1]`, `{"a":`, `{"stream":true`} {
		if _, err := WithoutField([]byte(bad), "stream"); err == nil {
			t.Errorf("WithoutField(%s): no error", bad)
		}
	}
}
