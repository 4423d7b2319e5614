package claude

import (
	"errors"
	"net/http"
	"testing"

	"github.com/llmfleet/llmfleet"
)

func TestInspect(t *testing.T) {
	var p Provider
	info := func(body string, h http.Header) llmfleet.RequestInfo {
		t.Helper()
		ri, err := p.Inspect(&llmfleet.Request{Body: []byte(body), Header: h})
		if err != nil {
			t.Fatal(err)
		}
		return ri
	}
	base := info(`{"model":"claude-sonnet-4-6","max_tokens":5,"messages":[]}`,
		http.Header{"Anthropic-Beta": {"b-1", "a-2"}, "Anthropic-Version": {"2023-06-01"}})
	if base.Model != "claude-sonnet-4-6" {
		t.Errorf("model %q", base.Model)
	}
	// The anthropic-* headers make the key; the body, other headers and
	// the order of repeated values do not.
	same := info(`{"stream":true,"messages":[{"role":"user","content":"x"}],"model":"claude-opus-4-1"}`,
		http.Header{"Anthropic-Beta": {"a-2", "b-1"}, "Anthropic-Version": {"2023-06-01"},
			"Llmfleet-Route": {"batch"}, "User-Agent": {"x"}})
	if same.PoolKey != base.PoolKey || same.Model != "claude-opus-4-1" {
		t.Errorf("%+v and %+v differ", same, base)
	}
	for name, h := range map[string]http.Header{
		"no beta":       {"Anthropic-Version": {"2023-06-01"}},
		"other beta":    {"Anthropic-Beta": {"b-1"}, "Anthropic-Version": {"2023-06-01"}},
		"other version": {"Anthropic-Beta": {"b-1", "a-2"}, "Anthropic-Version": {"2026-10-21"}},
	} {
		if k := info(`{"model":"claude-sonnet-4-6"}`, h).PoolKey; k == base.PoolKey {
			t.Errorf("%s: same pool key %q", name, k)
		}
	}
	for _, bad := range []string{`{not json`, `[1]`, ``} {
		_, err := p.Inspect(&llmfleet.Request{Body: []byte(bad)})
		var e *llmfleet.Error
		if !errors.As(err, &e) || e.StatusCode != 400 {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestBatchParams(t *testing.T) {
	var p Provider
	for in, want := range map[string]string{
		"{\"model\":\"m\", \"stream\":true,\"max_tokens\":1,\n\"x\":1.50,\"tools\":[{\"stream\":1}]}": "{\"model\":\"m\", \"max_tokens\":1,\n\"x\":1.50,\"tools\":[{\"stream\":1}]}",
		`{"stream":false,"model":"m"}`: `{"model":"m"}`,
		`{"model":"m",  "x":[1e3]}`:    `{"model":"m",  "x":[1e3]}`,
	} {
		got, err := p.BatchParams(&llmfleet.Request{Body: []byte(in)})
		if err != nil || string(got) != want {
			t.Errorf("BatchParams(%s) = %s, %v; want %s", in, got, err, want)
		}
	}
	_, err := p.BatchParams(&llmfleet.Request{Body: []byte(`[1]`)})
	var e *llmfleet.Error
	if !errors.As(err, &e) || e.StatusCode != 400 {
		t.Errorf("not an object: %v", err)
	}
}
