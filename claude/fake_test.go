package claude

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
)

var testCred = llmfleet.Credential{APIKey: "sk-ant-test-SECRETKEY"}

// sleeps records the waits a Provider asked for, without waiting.
type sleeps struct {
	mu sync.Mutex
	ds []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.ds = append(s.ds, d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *sleeps) list() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.ds...)
}

// newTest starts h on loopback and returns a Provider talking to it, with
// an injected clock and a sleep that does not wait.
func newTest(t *testing.T, h http.Handler) (*Provider, *sleeps) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	s := &sleeps{}
	return &Provider{
		BaseURL:    srv.URL,
		HTTPClient: srv.Client(),
		Now:        func() time.Time { return testNow },
		Sleep:      s.sleep,
	}, s
}

var testNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// drop closes the connection without answering, after the body was read.
func drop(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	panic(http.ErrAbortHandler)
}

func writeError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Request-Id", "req_hdr")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"type":"error","error":{"type":%q,"message":%q},"request_id":"req_body"}`, typ, msg)
}

// fakeBatch is a batch held by fakeBatches.
type fakeBatch struct {
	ID        string
	N         int
	CreatedAt time.Time
}

func (b *fakeBatch) json() string {
	return fmt.Sprintf(`{"id":%q,"type":"message_batch","processing_status":"in_progress",`+
		`"request_counts":{"processing":%d,"succeeded":0,"errored":0,"canceled":0,"expired":0},`+
		`"ended_at":null,"created_at":%q,"expires_at":%q,"cancel_initiated_at":null,"archived_at":null,"results_url":null}`,
		b.ID, b.N, b.CreatedAt.Format(time.RFC3339Nano), b.CreatedAt.Add(24*time.Hour).Format(time.RFC3339Nano))
}

// fakeBatches serves batch create and list. OnCreate, if set, decides what
// the nth create call (from 1) does: it returns whether to record the batch
// and whether to answer (false: drop the connection).
type fakeBatches struct {
	mu       sync.Mutex
	batches  []*fakeBatch
	creates  int
	lists    int
	now      time.Time
	OnCreate func(n int) (record, answer bool)
	OnList   func(w http.ResponseWriter) bool // true: handled
	// Block, if set, runs after the nth create was recorded, before it is
	// answered.
	Block func(n int)
}

func (f *fakeBatches) add(n int, at time.Time) *fakeBatch {
	b := &fakeBatch{ID: "msgbatch_" + strconv.Itoa(len(f.batches)+1), N: n, CreatedAt: at}
	f.batches = append(f.batches, b)
	return b
}

func (f *fakeBatches) counts() (creates, lists int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.creates, f.lists
}

func (f *fakeBatches) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages/batches":
		var body struct {
			Requests []json.RawMessage `json:"requests"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			writeError(w, 400, "invalid_request_error", err.Error())
			return
		}
		f.mu.Lock()
		f.creates++
		record, answer := true, true
		if f.OnCreate != nil {
			record, answer = f.OnCreate(f.creates)
		}
		var b *fakeBatch
		if record {
			b = f.add(len(body.Requests), f.now)
		}
		n := f.creates
		f.mu.Unlock()
		if f.Block != nil {
			f.Block(n)
		}
		if !answer {
			panic(http.ErrAbortHandler)
		}
		io.WriteString(w, b.json())
	case r.Method == http.MethodGet && r.URL.Path == "/v1/messages/batches":
		f.mu.Lock()
		f.lists++
		f.mu.Unlock()
		if f.OnList != nil && f.OnList(w) {
			return
		}
		limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
		if limit == 0 {
			limit = 20
		}
		after := r.URL.Query().Get("after_id")
		f.mu.Lock()
		var out []string
		started := after == ""
		hasMore := false
		for i := len(f.batches) - 1; i >= 0; i-- {
			b := f.batches[i]
			if !started {
				started = b.ID == after
				continue
			}
			if len(out) == limit {
				hasMore = true
				break
			}
			out = append(out, b.json())
		}
		f.mu.Unlock()
		fmt.Fprintf(w, `{"data":[%s],"has_more":%v,"first_id":null,"last_id":null}`, join(out), hasMore)
	default:
		writeError(w, 404, "not_found_error", "no route "+r.URL.Path)
	}
}

func join(ss []string) string {
	out := ""
	for i, s := range ss {
		if i > 0 {
			out += ","
		}
		out += s
	}
	return out
}
