package emulator

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"net"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"
)

// hijackRecorder is a ResponseRecorder whose connection can be hijacked,
// so that dropped connections work when ServeHTTP is called directly, as
// in synctest bubbles (where a loopback server would keep the bubble from
// ever idling).
type hijackRecorder struct {
	*httptest.ResponseRecorder
	hijacked bool
}

func (h *hijackRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	h.hijacked = true
	a, b := net.Pipe()
	b.Close()
	return a, bufio.NewReadWriter(bufio.NewReader(a), bufio.NewWriter(a)), nil
}

// serveDirect calls s.ServeHTTP with the given key and a JSON body.
func serveDirect(t *testing.T, s *Server, key, method, path string, body any) *hijackRecorder {
	t.Helper()
	var b []byte
	if body != nil {
		b = mustJSON(t, body)
	}
	req := httptest.NewRequest(method, "http://emulator.test"+path, bytes.NewReader(b))
	req.Header.Set("x-api-key", key)
	req.Header.Set("anthropic-version", "2023-06-01")
	rec := &hijackRecorder{ResponseRecorder: httptest.NewRecorder()}
	s.ServeHTTP(rec, req)
	return rec
}

// listDirect lists key's batches, newest first.
func listDirect(t *testing.T, s *Server, key string) []batchJSON {
	t.Helper()
	rec := serveDirect(t, s, key, "GET", "/v1/messages/batches", nil)
	if rec.Code != 200 {
		t.Fatalf("list: %d %s", rec.Code, rec.Body)
	}
	var l listJSON
	if err := json.Unmarshal(rec.Body.Bytes(), &l); err != nil {
		t.Fatal(err)
	}
	return l.Data
}

// TestLandAfterSynctest runs a late create on the time package's clock in
// a synctest bubble: Clock is left nil.
func TestLandAfterSynctest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &Server{Seed: 3, Turnaround: func(string, *rand.Rand) time.Duration { return 10 * time.Second }}
		start := time.Now()
		s.InjectFault(Fault{Endpoint: EndpointCreate, Delay: 2 * time.Second, LandAfter: 30 * time.Second})
		rec := serveDirect(t, s, "key-a", "POST", "/v1/messages/batches",
			map[string]any{"requests": items(2, func(int) string { return "late" })})
		if !rec.hijacked || rec.Body.Len() != 0 {
			t.Fatalf("the late create was answered: %d %s", rec.Code, rec.Body)
		}
		if d := time.Since(start); d != 2*time.Second {
			t.Fatalf("Delay took %v", d)
		}
		time.Sleep(30*time.Second - time.Nanosecond)
		if l := listDirect(t, s, "key-a"); len(l) != 0 {
			t.Fatalf("landed early: %+v", l)
		}
		time.Sleep(time.Nanosecond)
		l := listDirect(t, s, "key-a")
		if len(l) != 1 || l[0].CreatedAt != rfc3339(start.Add(32*time.Second)) || l[0].ProcessingStatus != "in_progress" {
			t.Fatalf("after landing: %+v", l)
		}
		if other := listDirect(t, s, "key-b"); len(other) != 0 {
			t.Fatalf("landed under another key: %+v", other)
		}
		time.Sleep(10 * time.Second)
		l = listDirect(t, s, "key-a")
		if l[0].ProcessingStatus != "ended" || *l[0].EndedAt != rfc3339(start.Add(42*time.Second)) ||
			l[0].RequestCounts.Succeeded != 2 {
			t.Fatalf("after turnaround: %+v", l[0])
		}
	})
}
