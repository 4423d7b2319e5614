package observe

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/llmfleet/llmfleet/proxy"
)

// newChain serves the serve command's handler chain, the Handler in front
// of a proxy, on loopback, with an upstream that records the paths it is
// asked for and answers a Message.
func newChain(t *testing.T) (base string, paths func() []string) {
	t.Helper()
	var mu sync.Mutex
	var seen []string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.Path)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":"msg_1","type":"message","role":"assistant","model":"claude-test","content":[],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`))
	}))
	t.Cleanup(up.Close)
	u, _ := url.Parse(up.URL)
	srv := &proxy.Server{Upstream: u}
	ts := httptest.NewServer(newTestPipeline(t, nil).Handler(srv.Handler()))
	t.Cleanup(ts.Close)
	return ts.URL, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
}

// noRedirects is a client that reports redirects instead of following them.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func do(t *testing.T, method, target, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, target, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Api-Key", "sk-test")
	req.Header.Set("Content-Type", "application/json")
	resp, err := noRedirects.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// TestChainDoubledSlashes: doubled slashes and a budget prefix without its
// trailing slash are served through the whole chain, never redirected.
func TestChainDoubledSlashes(t *testing.T) {
	base, paths := newChain(t)
	body := `{"model":"claude-test","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`
	for _, p := range []string{"/budget/60000//v1/messages", "//v1/messages", "/v1//messages", "//budget/60000/v1/messages"} {
		resp, got := do(t, "POST", base+p, body)
		if resp.StatusCode != 200 || !strings.Contains(got, `"msg_1"`) {
			t.Fatalf("POST %s: %d %s", p, resp.StatusCode, got)
		}
	}
	for _, p := range paths() {
		if p != "POST /v1/messages" {
			t.Errorf("upstream asked for %q", p)
		}
	}
	// /budget/<ms> alone is the root under a budget: what / answers.
	for _, p := range []string{"/budget/60000", "/budget/60000/", "/"} {
		resp, got := do(t, "POST", base+p, body)
		if resp.StatusCode != http.StatusNotFound || envelopeType(got) != "not_found_error" {
			t.Errorf("POST %s: %d %s", p, resp.StatusCode, got)
		}
	}
}

// envelopeType returns the error type of an Anthropic error envelope with
// a request id, or "" if body is none.
func envelopeType(body string) string {
	var env struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
		RequestID string `json:"request_id"`
	}
	if json.Unmarshal([]byte(body), &env) != nil || env.Type != "error" || env.Error.Message == "" || env.RequestID == "" {
		return ""
	}
	return env.Error.Type
}

// TestChainErrorsInEnvelope: every answer of llmfleet itself to a bad
// request, through the whole chain, is an Anthropic error envelope.
func TestChainErrorsInEnvelope(t *testing.T) {
	base, _ := newChain(t)
	cases := []struct {
		method, path string
		status       int
		typ, allow   string
	}{
		{"GET", "/llmfleet/nope", 404, "not_found_error", ""},
		{"GET", "/llmfleet/v1/nope", 404, "not_found_error", ""},
		{"POST", "/llmfleet/v1/nope", 405, "invalid_request_error", "GET, HEAD"},
		{"DELETE", "/llmfleet/v1/stats", 405, "invalid_request_error", "GET, HEAD"},
		{"POST", "/llmfleet/v1/dashboard", 405, "invalid_request_error", "GET, HEAD"},
		{"PUT", "/metrics", 405, "invalid_request_error", "GET, HEAD"},
		{"GET", "/llmfleet/v1/requests/lfr_nope", 0, "", ""},
		{"DELETE", "/llmfleet/v1/requests/lfr_nope", 404, "not_found_error", ""},
		{"GET", "/nope", 404, "not_found_error", ""},
		{"POST", "/healthz", 404, "not_found_error", ""},
		{"GET", "/llmfleet", 404, "not_found_error", ""},
		{"POST", "/budget/abc/v1/messages", 400, "invalid_request_error", ""},
	}
	for _, c := range cases {
		resp, got := do(t, c.method, base+c.path, "{")
		if c.status != 0 && resp.StatusCode != c.status {
			t.Errorf("%s %s: status %d, want %d: %s", c.method, c.path, resp.StatusCode, c.status, got)
		}
		if resp.StatusCode >= 300 && envelopeType(got) == "" {
			t.Errorf("%s %s: %d not an envelope: %q", c.method, c.path, resp.StatusCode, got)
		}
		if c.typ != "" && envelopeType(got) != c.typ {
			t.Errorf("%s %s: type %q, want %q", c.method, c.path, envelopeType(got), c.typ)
		}
		if c.allow != "" && resp.Header.Get("Allow") != c.allow {
			t.Errorf("%s %s: Allow %q", c.method, c.path, resp.Header.Get("Allow"))
		}
	}
}

// TestChainConnect: CONNECT, sent on a raw connection as a forward-proxy
// client would, is refused in the envelope.
func TestChainConnect(t *testing.T) {
	base, _ := newChain(t)
	u, _ := url.Parse(base)
	resp, got := rawRequest(t, u.Host, "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n")
	if resp.StatusCode != http.StatusMethodNotAllowed || envelopeType(got) != "invalid_request_error" || resp.Header.Get("Allow") == "" {
		t.Fatalf("CONNECT: %d %v %s", resp.StatusCode, resp.Header, got)
	}
}
