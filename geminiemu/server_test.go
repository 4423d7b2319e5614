package geminiemu_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet/geminiemu"
	"github.com/llmfleet/llmfleet/geminiwire"
	"github.com/llmfleet/llmfleet/providertest"
)

// post sends body to path with headers kv... and returns the status, the
// body and the headers.
func post(t *testing.T, srv *httptest.Server, path, body string, kv ...string) (int, string, http.Header) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(body))
	for i := 0; i+1 < len(kv); i += 2 {
		req.Header.Set(kv[i], kv[i+1])
	}
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b), res.Header
}

const hello = `{"contents":[{"role":"user","parts":[{"text":"hello"}]}]}`

// TestStrict: credentials, models and bodies are checked as the API does,
// and every refusal is Google's envelope.
func TestStrict(t *testing.T) {
	srv := httptest.NewServer(&geminiemu.Server{Keys: []string{"good"}})
	defer srv.Close()
	gen := "/v1beta/models/gemini-2.5-flash:generateContent"
	for _, c := range []struct {
		name, path, body string
		kv               []string
		status           int
		statusName, msg  string
	}{
		{"no key", gen, hello, nil, 403, "PERMISSION_DENIED", "unregistered callers"},
		{"bad key", gen, hello, []string{"X-Goog-Api-Key", "bad"}, 400, "INVALID_ARGUMENT", "API key not valid"},
		{"unknown model", "/v1beta/models/gemini-0:generateContent?key=good", hello, nil, 404, "NOT_FOUND", "models/gemini-0 is not found"},
		{"unknown member", gen + "?key=good", `{"contents":[{"parts":[{"text":"x"}]}],"stream":true}`, nil, 400, "INVALID_ARGUMENT", `Unknown name "stream"`},
		{"unknown config", gen + "?key=good", `{"contents":[{"parts":[{"text":"x"}]}],"generationConfig":{"max_tokens":5}}`, nil, 400, "INVALID_ARGUMENT", "generation_config"},
		{"no contents", gen + "?key=good", `{"contents":[]}`, nil, 400, "INVALID_ARGUMENT", "contents is not specified"},
		{"other model", gen + "?key=good", `{"model":"models/gemini-2.5-pro","contents":[{"parts":[{"text":"x"}]}]}`, nil, 400, "INVALID_ARGUMENT", "does not match"},
		{"bad tier", gen + "?key=good", `{"contents":[{"parts":[{"text":"x"}]}],"serviceTier":"cheap"}`, nil, 400, "INVALID_ARGUMENT", "service_tier"},
		{"bad role", gen + "?key=good", `{"contents":[{"role":"assistant","parts":[{"text":"x"}]}]}`, nil, 400, "INVALID_ARGUMENT", "valid role"},
		{"not json", gen + "?key=good", `{nope`, nil, 400, "INVALID_ARGUMENT", "Invalid JSON payload"},
		{"directed", gen + "?key=good", `{"contents":[{"parts":[{"text":"x [error:INTERNAL]"}]}]}`, nil, 500, "INTERNAL", "emulated"},
		{"no batch name", "/v1beta/models/gemini-2.5-flash:batchGenerateContent?key=good", `{"batch":{"inputConfig":{"requests":{"requests":[]}}}}`, nil, 400, "INVALID_ARGUMENT", "display_name"},
		{"no input", "/v1beta/models/gemini-2.5-flash:batchGenerateContent?key=good", `{"batch":{"displayName":"x","inputConfig":{}}}`, nil, 400, "INVALID_ARGUMENT", "input_config"},
		{"others' file", "/v1beta/models/gemini-2.5-flash:batchGenerateContent?key=good", `{"batch":{"displayName":"x","inputConfig":{"fileName":"files/nope"}}}`, nil, 403, "PERMISSION_DENIED", "files/nope"},
	} {
		status, body, _ := post(t, srv, c.path, c.body, c.kv...)
		s, ok := geminiwire.ParseError([]byte(body))
		if status != c.status || !ok || s.Code != c.status || s.Status != c.statusName || !strings.Contains(s.Message, c.msg) {
			t.Errorf("%s: %d %s", c.name, status, body)
		}
	}
	status, body, h := post(t, srv, gen, hello, "X-Goog-Api-Key", "good")
	if status != 200 || h.Get("X-Gemini-Service-Tier") != "standard" || !strings.Contains(body, `"serviceTier":"standard"`) {
		t.Errorf("standard call: %d %s %v", status, body, h)
	}
	// Without alt=sse a stream is a JSON array of chunks.
	status, body, _ = post(t, srv, "/v1beta/models/gemini-2.5-flash:streamGenerateContent?key=good", hello)
	var chunks []geminiwire.GenerateContentResponse
	if status != 200 || json.Unmarshal([]byte(body), &chunks) != nil || len(chunks) != 3 {
		t.Errorf("array stream: %d %s", status, body)
	}
}

// TestFlexAndFaults: flex waits its latency on the clock; a fault drops the
// connection or answers an error with RetryInfo; a batch request's fault
// is its error.
func TestFlexAndFaults(t *testing.T) {
	var fault atomic.Int32
	clock := providertest.NewManualClock(time.Date(2026, 8, 1, 10, 0, 0, 0, time.UTC))
	em := &geminiemu.Server{Clock: clock, FlexModels: []string{"gemini-2.5-flash"}, RetryDelay: 3 * time.Second,
		Fault: func(path string) int {
			if strings.Contains(path, "generateContent") {
				return int(fault.Load())
			}
			return 0
		}}
	srv := httptest.NewServer(em)
	defer srv.Close()
	flex := `{"contents":[{"parts":[{"text":"x"}]}],"serviceTier":"FLEX"}`
	if status, body, h := post(t, srv, "/v1beta/models/gemini-2.5-flash:generateContent?key=k", flex); status != 200 ||
		h.Get("X-Gemini-Service-Tier") != "flex" {
		t.Errorf("flex: %d %s", status, body)
	}
	if status, body, _ := post(t, srv, "/v1beta/models/gemini-2.5-pro:generateContent?key=k", flex); status != 400 ||
		geminiwire.Reason(true, status, []byte(body)) == nil {
		t.Errorf("flex on a model without it: %d %s", status, body)
	}
	fault.Store(429)
	status, body, _ := post(t, srv, "/v1beta/models/gemini-2.5-flash:generateContent?key=k", hello)
	if s, _ := geminiwire.ParseError([]byte(body)); status != 429 || s.Status != "RESOURCE_EXHAUSTED" {
		t.Errorf("fault 429: %d %s", status, body)
	} else if d, ok := s.RetryDelay(); !ok || d != 3*time.Second {
		t.Errorf("fault retry delay %v", d)
	}
	fault.Store(geminiemu.DropConnection)
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1beta/models/gemini-2.5-flash:generateContent?key=k", strings.NewReader(hello))
	if res, err := srv.Client().Do(req); err == nil {
		res.Body.Close()
		t.Error("dropped connection answered")
	}
	fault.Store(0)
	status, body, _ = post(t, srv, "/v1beta/models/gemini-2.5-flash:batchGenerateContent?key=k",
		`{"batch":{"displayName":"t","inputConfig":{"requests":{"requests":[{"request":`+hello+`,"metadata":{"key":"a"}}]}}}}`)
	if status != 200 {
		t.Fatalf("create %d %s", status, body)
	}
	var op geminiwire.Operation
	json.Unmarshal([]byte(body), &op)
	fault.Store(503) // the request's error inside the batch, once it runs
	clock.Advance(time.Minute)
	res, err := http.Get(srv.URL + "/v1beta/" + op.Name + "?key=k")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	json.NewDecoder(res.Body).Decode(&op)
	if r := op.Response; r == nil || r.InlinedResponses.InlinedResponses[0].Error.Name() != geminiwire.StatusUnavailable {
		t.Errorf("a faulted batch request: %+v", op)
	}
}

// TestExpiry: a batch slower than 48 hours expires, its requests failed
// DEADLINE_EXCEEDED.
func TestExpiry(t *testing.T) {
	clock := providertest.NewManualClock(time.Date(2026, 8, 1, 10, 0, 0, 0, time.UTC))
	srv := httptest.NewServer(&geminiemu.Server{Clock: clock, BatchTurnaround: 72 * time.Hour})
	defer srv.Close()
	_, body, _ := post(t, srv, "/v1beta/models/gemini-2.5-flash:batchGenerateContent?key=k",
		`{"batch":{"displayName":"t","inputConfig":{"requests":{"requests":[{"request":`+hello+`,"metadata":{"key":"a"}}]}}}}`)
	var op geminiwire.Operation
	json.Unmarshal([]byte(body), &op)
	clock.Advance(49 * time.Hour)
	res, err := http.Get(srv.URL + "/v1beta/" + op.Name + "?key=k")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	json.NewDecoder(res.Body).Decode(&op)
	if !op.Done || op.Metadata.State != geminiwire.BatchExpired || op.Response == nil {
		t.Fatalf("expired: %+v", op.Metadata)
	}
	r := op.Response.InlinedResponses.InlinedResponses
	if len(r) != 1 || r[0].Error == nil || r[0].Error.Name() != geminiwire.StatusDeadlineExceeded || op.Metadata.BatchStats.FailedRequestCount != 1 {
		t.Errorf("expired answers %+v", r)
	}
}

// TestV1: the stable version serves the model methods as /v1beta does,
// and neither Batch Mode nor the Files API.
func TestV1(t *testing.T) {
	emu := &geminiemu.Server{}
	srv := httptest.NewServer(emu)
	defer srv.Close()
	code, body, _ := post(t, srv, "/v1/models/gemini-2.5-flash:generateContent?key=k", hello)
	if code != http.StatusOK || !strings.Contains(body, "Answer to: hello") {
		t.Fatalf("v1 generateContent: %d %s", code, body)
	}
	code, body, _ = post(t, srv, "/v1/models/gemini-2.5-flash:streamGenerateContent?alt=sse&key=k", hello)
	if code != http.StatusOK || !strings.Contains(body, "data: ") {
		t.Fatalf("v1 stream: %d %s", code, body)
	}
	code, body, _ = post(t, srv, "/v1/models/gemini-0:generateContent?key=k", hello)
	if code != http.StatusNotFound || !strings.Contains(body, "API version v1,") {
		t.Fatalf("v1 unknown model: %d %s", code, body)
	}
	code, body, _ = post(t, srv, "/v1/models/gemini-2.5-flash:batchGenerateContent?key=k",
		`{"batch":{"displayName":"x","inputConfig":{"requests":{"requests":[{"request":`+hello+`}]}}}}`)
	if code != http.StatusNotFound || !strings.Contains(body, `"NOT_FOUND"`) {
		t.Fatalf("v1 batch create: %d %s", code, body)
	}
	res, err := srv.Client().Get(srv.URL + "/v1/models/gemini-2.5-flash?key=k")
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("v1 model read: %v %v", err, res)
	}
	res.Body.Close()
	if n := emu.Stats().Billed["hello"]; n != 2 {
		t.Errorf("billed %d times, want 2", n)
	}
}

// TestCrashFaults: what a crash test needs of the emulator: a create
// made with its answer dropped (DropAnswer), one landing late
// (LandAfter: not found nor listed before, there after), and the batches
// counted by displayName and owner with their requests, and the reads of
// an ended batch.
func TestCrashFaults(t *testing.T) {
	clock := providertest.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	emu := &geminiemu.Server{Clock: clock, BatchTurnaround: time.Minute,
		Fault: func(path string) int {
			if strings.HasSuffix(path, ":batchGenerateContent") {
				return geminiemu.DropAnswer
			}
			return 0
		},
		LandAfter: func(name string) time.Duration {
			if name == "late" {
				return time.Hour
			}
			return 0
		}}
	srv := httptest.NewServer(emu)
	defer srv.Close()
	create := func(name string) {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1beta/models/gemini-2.5-flash:batchGenerateContent?key=k",
			strings.NewReader(`{"batch":{"displayName":"`+name+`","inputConfig":{"requests":{"requests":[{"request":`+hello+`,"metadata":{"key":"`+name+`-1"}}]}}}}`))
		if res, err := srv.Client().Do(req); err == nil {
			res.Body.Close()
			t.Fatalf("%s: answered %d, want the connection dropped", name, res.StatusCode)
		}
	}
	create("made")
	create("late")
	list := func() string {
		res, err := srv.Client().Get(srv.URL + "/v1beta/batches?key=k")
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return string(b)
	}
	if l := list(); !strings.Contains(l, `"made"`) || strings.Contains(l, `"late"`) {
		t.Fatalf("before landing: %s", l)
	}
	if st := emu.Stats(); st.Created["made"] != 1 || st.Created["late"] != 0 || emu.BatchesCreated("k") != 1 ||
		len(st.Submissions) != 1 || st.Submissions[0].Prompt != "hello" || st.Submissions[0].Key != "made-1" {
		t.Fatalf("before landing: %+v", st)
	}
	clock.Advance(2 * time.Hour)
	if l := list(); !strings.Contains(l, `"late"`) {
		t.Fatalf("after landing: %s", l)
	}
	if emu.BatchesCreated("k") != 2 || emu.BatchesCreated("other") != 0 {
		t.Fatalf("created: %d", emu.BatchesCreated("k"))
	}
	st := emu.Stats()
	res, err := srv.Client().Get(srv.URL + "/v1beta/" + "batches/" + st.Submissions[0].BatchID + "?key=k")
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("read: %v %v", err, res)
	}
	res.Body.Close()
	if n := emu.Stats().ResultsRead[st.Submissions[0].BatchID]; n != 1 {
		t.Errorf("results read %d times, want 1", n)
	}
}
