package observe

import (
	"bufio"
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// syncBuffer is a bytes.Buffer safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestLogBodies(t *testing.T) {
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: one\n\n")
		http.NewResponseController(w).Flush()
		io.WriteString(w, "echo "+string(body))
	})
	logs := &syncBuffer{}
	ts := httptest.NewServer(LogBodies(next, slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	defer ts.Close()
	req, _ := http.NewRequest("POST", ts.URL+"/budget/100/v1/messages", strings.NewReader(`{"secret prompt":1}`))
	req.Header.Set("x-api-key", "sk-do-not-log")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	first, _ := bufio.NewReader(resp.Body).ReadString('\n') // flushed before the rest
	resp.Body.Close()
	if first != "event: one\n" {
		t.Fatalf("first line %q", first)
	}
	ts.Close() // waits for the handler, and so the log line
	got := logs.String()
	if !strings.Contains(got, `secret prompt`) || !strings.Contains(got, `echo {`) || strings.Contains(got, "sk-do-not-log") {
		t.Fatalf("log: %s", got)
	}
}

// TestLogBodiesKeepsTheConnection: a handler behind LogBodies cannot take
// the connection over (the proxy then answers through the recorder, and
// the answer is logged).
func TestLogBodiesKeepsTheConnection(t *testing.T) {
	var hijackErr error
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _, hijackErr = http.NewResponseController(w).Hijack()
		io.WriteString(w, "answered")
	})
	ts := httptest.NewServer(LogBodies(next, slog.New(slog.DiscardHandler)))
	defer ts.Close()
	resp, err := http.Post(ts.URL+"/v1/messages", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if hijackErr == nil || string(body) != "answered" {
		t.Fatalf("hijack %v, body %q", hijackErr, body)
	}
}
