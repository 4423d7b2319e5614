package emulator

import (
	"bytes"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet/providertest"
)

// env is a Server behind a real loopback HTTP server, with a manual clock.
type env struct {
	t     *testing.T
	s     *Server
	clock *providertest.ManualClock
	ts    *httptest.Server
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{t: t, clock: providertest.NewManualClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))}
	e.s = &Server{
		Clock: e.clock,
		Seed:  7,
		Turnaround: func(model string, r *rand.Rand) time.Duration {
			return 10*time.Second + time.Duration(r.IntN(10))*time.Second
		},
	}
	e.ts = httptest.NewServer(e.s)
	t.Cleanup(e.ts.Close)
	return e
}

type resp struct {
	status int
	header http.Header
	body   []byte
}

func (r resp) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("bad JSON %q: %v", r.body, err)
	}
	return m
}

// do sends a request with the default key and version.
func (e *env) do(method, path string, body any, hdr ...string) resp {
	e.t.Helper()
	h := http.Header{"X-Api-Key": {"key-a"}, "Anthropic-Version": {"2023-06-01"}}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i+1] == "" {
			h.Del(hdr[i])
		} else {
			h.Set(hdr[i], hdr[i+1])
		}
	}
	return e.raw(method, path, body, h)
}

func (e *env) raw(method, path string, body any, h http.Header) resp {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	case string:
		rd = bytes.NewReader([]byte(b))
	default:
		j, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, e.ts.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header = h
	res, err := e.ts.Client().Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp{res.StatusCode, res.Header, b}
}

// msgBody returns a simple create-message body.
func msgBody(text string, extra ...any) map[string]any {
	m := map[string]any{
		"model":      "claude-sonnet-4-6",
		"max_tokens": 1024,
		"messages":   []any{map[string]any{"role": "user", "content": text}},
	}
	for i := 0; i+1 < len(extra); i += 2 {
		m[extra[i].(string)] = extra[i+1]
	}
	return m
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// errType checks that r is an error envelope of the given status and type.
func errType(t *testing.T, r resp, status int, typ string) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d; body %s", r.status, status, r.body)
	}
	m := r.json(t)
	inner, _ := m["error"].(map[string]any)
	if m["type"] != "error" || inner == nil || inner["type"] != typ || inner["message"] == "" {
		t.Fatalf("envelope %s, want type %s", r.body, typ)
	}
	rid, _ := m["request_id"].(string)
	if rid == "" || rid != r.header.Get("request-id") {
		t.Fatalf("request_id %q, header %q", rid, r.header.Get("request-id"))
	}
}
