package proxy_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/llmfleet/llmfleet/proxy"
)

// lockedBuffer collects log output written from several goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// refusedURL is the address of a listener closed at once: connecting to
// it is refused.
func refusedURL(t *testing.T) *url.URL {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse("http://" + ln.Addr().String())
	ln.Close()
	return u
}

// TestUnreachableUpstreamNoPanic: while the upstream refuses connections,
// every sync call, with or without a budget, streaming or not, gets 502
// api_error in the envelope and the log one warning line, never a panic.
func TestUnreachableUpstreamNoPanic(t *testing.T) {
	var logs lockedBuffer
	srv := &proxy.Server{Upstream: refusedURL(t), Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	ts := httptest.NewUnstartedServer(srv.Handler())
	ts.Config.ErrorLog = slog.NewLogLogger(slog.NewTextHandler(&logs, nil), slog.LevelError)
	ts.Start()
	t.Cleanup(ts.Close)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("log:\n%s", logs.String())
		}
	})

	body := `{"model":"claude-test","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`
	stream := `{"model":"claude-test","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"hi"}]}`
	cases := []struct{ path, body string }{
		{"/v1/messages", body},
		{"/v1/messages", stream},
		{"/budget/60000/v1/messages", body},
		{"/budget/60000/v1/messages", stream},
		{"/v1/messages/count_tokens", body},
	}
	for range 5 {
		for _, c := range cases {
			resp := post(t, ts.URL+c.path, c.body)
			got := readAll(t, resp.Body)
			if resp.StatusCode != http.StatusBadGateway {
				t.Fatalf("%s: status %d %s", c.path, resp.StatusCode, got)
			}
			var env struct {
				Type  string                `json:"type"`
				Error struct{ Type string } `json:"error"`
			}
			if err := json.Unmarshal([]byte(got), &env); err != nil || env.Type != "error" || env.Error.Type != "api_error" {
				t.Fatalf("%s: not an api_error envelope: %s", c.path, got)
			}
		}
	}
	ts.Close()
	out := logs.String()
	if strings.Contains(out, "panic") || strings.Contains(out, "goroutine ") {
		t.Fatalf("log has a panic:\n%s", out)
	}
	if n := strings.Count(out, "upstream call failed"); n != 25 {
		t.Errorf("%d warning lines, want 25:\n%s", n, out)
	}
}
