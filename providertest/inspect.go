package providertest

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/llmfleet/llmfleet"
)

func (s *suite) inspect(t *testing.T) {
	e := s.env(t)
	info := func(body []byte, h http.Header) llmfleet.RequestInfo {
		t.Helper()
		req := s.request(e, body)
		req.Header = h
		ri, err := e.Provider.Inspect(req)
		if err != nil {
			t.Fatalf("Inspect(%s): %v", body, err)
		}
		return ri
	}
	h0, others := s.wire().PoolHeaders()
	base := info(s.body("first question"), h0)
	if base.Model != s.model() {
		t.Errorf("Inspect model %q, want %q", base.Model, s.model())
	}
	// Requests that differ only in their bodies share a pool.
	other := info(s.body("a second, longer question", `"temperature":0.5`, `"metadata":{"user_id":"u"}`), h0)
	if other.PoolKey != base.PoolKey || other.Model != s.model() {
		t.Errorf("Inspect: %+v and %+v differ only in their bodies", other, base)
	}
	if a, b := info(s.body("q"), nil), info(s.body("r"), http.Header{}); a.PoolKey != b.PoolKey {
		t.Errorf("Inspect: no header and an empty one give pool keys %q and %q", a.PoolKey, b.PoolKey)
	}
	for name, h := range others {
		if k := info(s.body("first question"), h).PoolKey; k == base.PoolKey {
			t.Errorf("Inspect: %s gives the pool key of %v: %q", name, h0, k)
		}
	}
	for _, bad := range []string{`{not json`, `["model"]`} {
		if _, err := e.Provider.Inspect(s.request(e, []byte(bad))); err == nil {
			t.Errorf("Inspect(%s): no error", bad)
		}
	}
}

func (s *suite) batchParams(t *testing.T) {
	e := s.env(t)
	plain := string(s.body("what is in a batch?"))
	odd := fmt.Sprintf("{\"model\":%q,  \"max_tokens\":1024 ,\n\t\"temperature\":1.50,\"metadata\":{\"user_id\":\"stream\"},"+
		`"tools":[{"name":"t","input_schema":{"type":"object","properties":{"stream":{"type":"boolean"}}}}],`+
		`"messages":[{"role":"user","content":"\"stream\":true"}]`, s.model())
	for in, want := range map[string]string{
		plain: plain,
		strings.TrimSuffix(plain, "}") + `,"stream":true}`: plain,
		`{"stream":false,` + plain[1:]:                     plain,
		odd + `,"stream":true}`:                            odd + "}",
		odd + "}":                                          odd + "}",
	} {
		got, err := e.Provider.BatchParams(s.request(e, []byte(in)))
		if err != nil || string(got) != want {
			t.Errorf("BatchParams(%s) = %s, %v; want %s", in, got, err, want)
		}
	}
}
