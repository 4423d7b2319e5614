package observe

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/dashboard"
	"github.com/llmfleet/llmfleet/dispatch"
	"github.com/llmfleet/llmfleet/ledger"
)

// get serves one GET through h and returns the status and body.
func get(t *testing.T, h http.Handler, target string) (int, http.Header, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
	body, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, rec.Header(), string(body)
}

// errorType returns the type of an error envelope.
func errorType(t *testing.T, body string) string {
	t.Helper()
	var env struct {
		Type  string `json:"type"`
		Error struct {
			Type string `json:"type"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &env); err != nil || env.Type != "error" {
		t.Fatalf("not an error envelope: %s", body)
	}
	return env.Error.Type
}

func TestHandlerStats(t *testing.T) {
	st := &memStore{}
	// An entry of two days ago, only in the store.
	st.entries = []llmfleet.LedgerEntry{{Time: testNow.Add(-48 * time.Hour), Model: "m", Route: llmfleet.RouteSync, Outcome: "ok"}}
	p := newTestPipeline(t, st)
	p.Observe(llmfleet.LedgerEntry{Time: testNow.Add(-time.Hour), Model: "m", Route: llmfleet.RouteBatch, Outcome: "ok",
		BatchID: "msgbatch_1", Usage: llmfleet.Usage{InputTokens: 10}})
	h := p.Handler(http.NotFoundHandler())

	var s ledger.Summary
	code, hdr, body := get(t, h, "/llmfleet/v1/stats")
	if code != 200 || hdr.Get("Content-Type") != "application/json" || hdr.Get("Cache-Control") != "no-store" {
		t.Fatalf("stats: %d %v %s", code, hdr, body)
	}
	// Without a period: the store's whole ledger, the entry of two days
	// ago included.
	if err := json.Unmarshal([]byte(body), &s); err != nil || s.BatchedCalls != 1 || s.SyncCalls != 1 || s.BatchesSubmitted != 1 ||
		!strings.HasPrefix(body, `{"period":"all",`) {
		t.Fatalf("the whole ledger: %v %s", err, body)
	}
	_, _, body = get(t, h, "/llmfleet/v1/stats?period=24h")
	s = ledger.Summary{}
	if err := json.Unmarshal([]byte(body), &s); err != nil || s.BatchedCalls != 1 || s.SyncCalls != 0 ||
		!s.From.Equal(testNow.Add(-24*time.Hour)) || !strings.HasPrefix(body, `{"period":"24h",`) {
		t.Fatalf("period=24h: %v %s", err, body)
	}
	for _, q := range []string{"period=2w", "period=24h&since=1h"} {
		code, _, body = get(t, h, "/llmfleet/v1/stats?"+q)
		if code != 400 || errorType(t, body) != "invalid_request_error" || !strings.Contains(body, "period") {
			t.Fatalf("%s: %d %s", q, code, body)
		}
	}

	// A period is read from the store, the entry just observed included
	// (the writer is flushed first), on the pipeline's clock.
	_, _, body = get(t, h, "/llmfleet/v1/stats?since=24h")
	s = ledger.Summary{}
	if err := json.Unmarshal([]byte(body), &s); err != nil || s.BatchedCalls != 1 || s.SyncCalls != 0 || s.CostUSD != 5 ||
		!s.To.Equal(testNow) || s.BatchesSubmitted != 1 {
		t.Fatalf("last 24h: %v %s", err, body)
	}
	_, _, body = get(t, h, "/llmfleet/v1/stats?since=0")
	s = ledger.Summary{}
	if err := json.Unmarshal([]byte(body), &s); err != nil || s.BatchedCalls != 1 || s.SyncCalls != 1 {
		t.Fatalf("everything kept: %v %s", err, body)
	}

	code, _, body = get(t, h, "/llmfleet/v1/stats?since=soon")
	if code != 400 || errorType(t, body) != "invalid_request_error" || !strings.Contains(body, "since") {
		t.Fatalf("bad period: %d %s", code, body)
	}
	st.readErr = errors.New("disk gone")
	code, _, body = get(t, h, "/llmfleet/v1/stats?since=1h")
	if code != 500 || errorType(t, body) != "api_error" || !strings.Contains(body, "reading the ledger: disk gone") {
		t.Fatalf("store failure: %d %s", code, body)
	}

	noStore := newTestPipeline(t, nil).Handler(http.NotFoundHandler())
	_, _, body = get(t, noStore, "/llmfleet/v1/stats")
	s = ledger.Summary{}
	if err := json.Unmarshal([]byte(body), &s); err != nil || s.BatchesSubmitted != 7 || !strings.HasPrefix(body, `{"period":"since_start",`) {
		t.Fatalf("no store: the running totals: %v %s", err, body)
	}
	code, _, body = get(t, noStore, "/llmfleet/v1/stats?since=1h")
	if code != 404 || errorType(t, body) != "not_found_error" {
		t.Fatalf("a period without a store: %d %s", code, body)
	}
}

func TestHandlerRoutes(t *testing.T) {
	submitted := testNow.Add(-90 * time.Second)
	p, err := New(Config{Clock: fixedClock{testNow},
		InFlight: func() []dispatch.FlightInfo {
			return []dispatch.FlightInfo{{ID: "msgbatch_1", Provider: "anthropic", Models: []string{"m"}, Requests: 3, Submitted: submitted}}
		}})
	if err != nil {
		t.Fatal(err)
	}
	p.ObserveTurnaround("anthropic", "m", time.Minute)
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "proxy "+r.Method+" "+r.URL.Path) })
	h := p.Handler(next)

	code, _, body := get(t, h, "/llmfleet/v1/dashboard")
	var snap dashboard.Snapshot
	if err := json.Unmarshal([]byte(body), &snap); code != 200 || err != nil {
		t.Fatalf("dashboard: %d %v %s", code, err, body)
	}
	if len(snap.BatchesInFlight) != 1 || snap.BatchesInFlight[0].State != "created" || snap.BatchesInFlight[0].AgeSeconds != 90 ||
		snap.BatchesInFlight[0].Size != 3 || len(snap.Turnaround["m"]) != 1 || !snap.Time.Equal(testNow) {
		t.Fatalf("snapshot: %s", body)
	}
	if code, hdr, _ := get(t, h, "/llmfleet/"); code != 200 || !strings.HasPrefix(hdr.Get("Content-Type"), "text/html") {
		t.Fatalf("dashboard page: %d %v", code, hdr)
	}
	if code, _, body := get(t, h, "/metrics"); code != 200 || !strings.Contains(body, "llmfleet_batch_turnaround_seconds") {
		t.Fatalf("metrics: %d %s", code, body)
	}
	for _, path := range []string{"/v1/messages", "/llmfleet/v1/requests/lfr_1"} {
		if _, _, body := get(t, h, path); body != "proxy GET "+path {
			t.Fatalf("%s: %q, want the proxy", path, body)
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/messages", strings.NewReader("{}")))
	if rec.Body.String() != "proxy POST /v1/messages" {
		t.Fatalf("POST: %q", rec.Body.String())
	}
}
