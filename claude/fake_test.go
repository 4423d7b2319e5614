package claude

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/providertest"
)

var testCred = llmfleet.Credential{APIKey: "sk-ant-test-SECRETKEY"}

// newTest starts h on loopback and returns a Provider talking to it, with
// a manual clock reading testNow, whose waits take no time and are
// recorded.
func newTest(t *testing.T, h http.Handler) (*Provider, *providertest.ManualClock) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	clock := providertest.NewManualClock(testNow)
	return &Provider{BaseURL: srv.URL, HTTPClient: srv.Client(), Clock: clock}, clock
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
	CustomIDs []string
	CreatedAt time.Time
	Ended     bool
	Gone      bool // its results answer 404
}

func (b *fakeBatch) json() string {
	status, processing, succeeded, endedAt, results := "in_progress", len(b.CustomIDs), 0, "null", "null"
	if b.Ended {
		status, processing, succeeded = "ended", 0, len(b.CustomIDs)
		endedAt = strconv.Quote(b.CreatedAt.Add(time.Hour).Format(time.RFC3339Nano))
		results = strconv.Quote("https://api.anthropic.com/v1/messages/batches/" + b.ID + "/results")
	}
	return fmt.Sprintf(`{"id":%q,"type":"message_batch","processing_status":%q,`+
		`"request_counts":{"processing":%d,"succeeded":%d,"errored":0,"canceled":0,"expired":0},`+
		`"ended_at":%s,"created_at":%q,"expires_at":%q,"cancel_initiated_at":null,"archived_at":null,"results_url":%s}`,
		b.ID, status, processing, succeeded, endedAt, b.CreatedAt.Format(time.RFC3339Nano),
		b.CreatedAt.Add(24*time.Hour).Format(time.RFC3339Nano), results)
}

// fakeBatches serves batch create, list and results. A create records a
// batch created at now, in progress; batches list newest (last added)
// first.
type fakeBatches struct {
	mu      sync.Mutex
	batches []*fakeBatch
	creates int            // create calls, answered or not
	lists   int            // list calls
	results map[string]int // results calls by batch id
	now     time.Time
	// OnCreate, if set, may answer the nth create call (from 1) itself,
	// without recording a batch: it returns true if it did.
	OnCreate func(n int, w http.ResponseWriter, r *http.Request) bool
	// OnList, if set, may answer a list call itself: true if it did.
	OnList func(w http.ResponseWriter) bool
}

// add records a batch of n requests tagged tag, created at at, in
// progress.
func (f *fakeBatches) add(tag string, n int, at time.Time) *fakeBatch {
	return f.put(tag, n, at, false)
}

// ended records a batch as add does, one that has ended.
func (f *fakeBatches) ended(tag string, n int, at time.Time) *fakeBatch {
	return f.put(tag, n, at, true)
}

func (f *fakeBatches) put(tag string, n int, at time.Time, ended bool) *fakeBatch {
	f.mu.Lock()
	defer f.mu.Unlock()
	b := &fakeBatch{ID: "msgbatch_" + strconv.Itoa(len(f.batches)+1), CreatedAt: at, Ended: ended}
	for i := range n {
		b.CustomIDs = append(b.CustomIDs, tag+"-"+strconv.Itoa(i))
	}
	f.batches = append(f.batches, b)
	return b
}

func (f *fakeBatches) counts() (creates, lists int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.creates, f.lists
}

// recorded returns the number of batches held.
func (f *fakeBatches) recorded() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.batches)
}

// resultsRead returns the ids of the batches whose results were asked for.
func (f *fakeBatches) resultsRead() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Sorted(maps.Keys(f.results))
}

func (f *fakeBatches) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	const root = "/v1/messages/batches"
	switch {
	case r.Method == http.MethodPost && r.URL.Path == root:
		f.mu.Lock()
		f.creates++
		n := f.creates
		f.mu.Unlock()
		if f.OnCreate != nil && f.OnCreate(n, w, r) {
			return
		}
		var body struct {
			Requests []struct {
				CustomID string `json:"custom_id"`
			} `json:"requests"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			writeError(w, 400, "invalid_request_error", err.Error())
			return
		}
		f.mu.Lock()
		b := &fakeBatch{ID: "msgbatch_" + strconv.Itoa(len(f.batches)+1), CreatedAt: f.now}
		for _, rq := range body.Requests {
			b.CustomIDs = append(b.CustomIDs, rq.CustomID)
		}
		f.batches = append(f.batches, b)
		f.mu.Unlock()
		io.WriteString(w, b.json())
	case r.Method == http.MethodGet && r.URL.Path == root:
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
		fmt.Fprintf(w, `{"data":[%s],"has_more":%v,"first_id":null,"last_id":null}`, strings.Join(out, ","), hasMore)
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, root+"/") && strings.HasSuffix(r.URL.Path, "/results"):
		id := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, root+"/"), "/results")
		f.mu.Lock()
		if f.results == nil {
			f.results = map[string]int{}
		}
		f.results[id]++
		var b *fakeBatch
		for _, c := range f.batches {
			if c.ID == id {
				b = c
			}
		}
		f.mu.Unlock()
		switch {
		case b == nil || b.Gone:
			writeError(w, 404, "not_found_error", "no batch "+id)
		case !b.Ended:
			writeError(w, 400, "invalid_request_error", "batch "+id+" is still in progress")
		default:
			for _, cid := range b.CustomIDs {
				fmt.Fprintf(w, `{"custom_id":%q,"result":{"type":"succeeded","message":%s}}`+"\n", cid, okMessage)
			}
		}
	default:
		writeError(w, 404, "not_found_error", "no route "+r.URL.Path)
	}
}
