package emulator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestFaultStatuses(t *testing.T) {
	e := newEnv(t)
	body := msgBody("x")
	e.s.InjectFault(Fault{Endpoint: EndpointMessages, Status: 429, RetryAfter: 1500 * time.Millisecond, Times: 2})
	for range 2 {
		r := e.do("POST", "/v1/messages", body)
		errType(t, r, 429, "rate_limit_error")
		if r.header.Get("retry-after") != "2" {
			t.Fatalf("retry-after %q", r.header.Get("retry-after"))
		}
	}
	if r := e.do("POST", "/v1/messages", body); r.status != 200 {
		t.Fatalf("fault outlived Times: %d", r.status)
	}
	e.s.InjectFault(Fault{Method: "POST", PathPrefix: "/v1/messages", Status: 429, ErrorCode: "enforced_spend_limit_reached"})
	r := e.do("POST", "/v1/messages", body)
	errType(t, r, 429, "rate_limit_error")
	var env struct {
		Error struct {
			Details struct {
				ErrorCode string `json:"error_code"`
			} `json:"details"`
		} `json:"error"`
	}
	json.Unmarshal(r.body, &env)
	if env.Error.Details.ErrorCode != "enforced_spend_limit_reached" || r.header.Get("retry-after") != "" {
		t.Fatalf("spend cap %s %v", r.body, r.header)
	}
	for _, st := range []struct {
		status int
		typ    string
	}{{400, "invalid_request_error"}, {401, "authentication_error"}, {402, "billing_error"}, {403, "permission_error"},
		{404, "not_found_error"}, {409, "conflict_error"}, {413, "request_too_large"}, {500, "api_error"},
		{504, "timeout_error"}, {529, "overloaded_error"}} {
		e.s.InjectFault(Fault{Endpoint: EndpointRetrieve, Status: st.status, ShouldRetry: "false"})
		r := e.do("GET", "/v1/messages/batches/msgbatch_x", nil)
		errType(t, r, st.status, st.typ)
		if r.header.Get("x-should-retry") != "false" {
			t.Fatal("no x-should-retry")
		}
	}
	// Endpoint filter: a create fault leaves messages alone.
	e.s.InjectFault(Fault{Endpoint: EndpointCreate, Status: 500, Times: -1})
	if r := e.do("POST", "/v1/messages", body); r.status != 200 {
		t.Fatal("create fault hit messages")
	}
	errType(t, e.do("POST", "/v1/messages/batches", map[string]any{"requests": items(1, func(int) string { return "a" })}), 500, "api_error")
	if e.s.PendingFaults() != 1 {
		t.Fatal("unlimited fault used up")
	}
	e.s.ClearFaults()
	if st := e.s.Stats(); st.FaultsFired != 14 || len(st.Submissions) != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestFaultDelayAndDrops(t *testing.T) {
	e := newEnv(t)
	e.s.InjectFault(Fault{Delay: 5 * time.Second})
	if r, slept := e.do("POST", "/v1/messages", msgBody("x")), e.clock.Slept(); r.status != 200 || len(slept) != 1 || slept[0] != 5*time.Second {
		t.Fatalf("delay: %d %v", r.status, slept)
	}
	send := func(path string, body []byte) error {
		_, err := e.sendRaw(path, body)
		return err
	}
	e.s.InjectFault(Fault{DropConnection: true})
	if err := send("/v1/messages", mustJSON(t, msgBody("x"))); err == nil {
		t.Fatal("DropConnection: no error")
	}
	create := mustJSON(t, map[string]any{"requests": items(3, func(int) string { return "a" })})
	e.s.InjectFault(Fault{Endpoint: EndpointCreate, DropAfterBody: true})
	if err := send("/v1/messages/batches", create); err == nil {
		t.Fatal("DropAfterBody: no error")
	}
	if n := len(e.s.Stats().Submissions); n != 0 {
		t.Fatalf("DropAfterBody created a batch (%d submissions)", n)
	}
	e.s.InjectFault(Fault{Endpoint: EndpointCreate, DropResponse: true})
	if err := send("/v1/messages/batches", create); err == nil {
		t.Fatal("DropResponse: no error")
	}
	st := e.s.Stats()
	if len(st.Submissions) != 3 {
		t.Fatalf("DropResponse: %d submissions", len(st.Submissions))
	}
	// The batch exists and can be found by listing.
	r := e.do("GET", "/v1/messages/batches", nil)
	if d := r.json(t)["data"].([]any); len(d) != 1 || d[0].(map[string]any)["id"] != st.Submissions[0].BatchID {
		t.Fatalf("list after DropResponse: %s", r.body)
	}
}

func TestFaultStreamError(t *testing.T) {
	e := newEnv(t)
	e.s.InjectFault(Fault{StreamError: true, StreamErrorAfter: 3})
	// A non-streaming request does not use the stream fault.
	if r := e.do("POST", "/v1/messages", msgBody("x")); r.status != 200 || e.s.PendingFaults() != 1 {
		t.Fatal("stream fault used by a non-streaming request")
	}
	r := e.do("POST", "/v1/messages", msgBody("x", "stream", true))
	if r.status != 200 {
		t.Fatalf("status %d", r.status)
	}
	evs := parseSSE(t, r.body)
	if len(evs) != 4 || evs[0].name != "message_start" || evs[3].name != "error" {
		t.Fatalf("events %v", evs)
	}
	if typ := evs[3].data["error"].(map[string]any)["type"]; typ != "overloaded_error" {
		t.Fatalf("error event %s", evs[3].raw)
	}
	if !strings.Contains(string(r.body), "event: error\ndata: {\"type\":\"error\"") {
		t.Fatalf("framing %q", r.body)
	}
}

func TestStatsEndpoint(t *testing.T) {
	e := newEnv(t)
	b := e.create(items(2, func(i int) string { return "a" }))
	e.get(b["id"].(string))
	r := e.raw("GET", StatsPath, nil, http.Header{})
	if r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	var st Stats
	if err := json.Unmarshal(r.body, &st); err != nil {
		t.Fatal(err)
	}
	if st.Calls[EndpointCreate] != 1 || st.Calls[EndpointRetrieve] != 1 || len(st.Submissions) != 2 ||
		st.Batches[b["id"].(string)].Retrieves != 1 || st.Batches[b["id"].(string)].Requests != 2 || st.ManagementCalls() != 2 {
		t.Fatalf("stats %+v", st)
	}
	// Both requests carry the same params: a duplicate.
	if d := st.DuplicateParams(); len(d) != 1 || d[0] != st.Submissions[0].ParamsHash {
		t.Fatalf("duplicates %v", d)
	}
}

func TestFaultAfterProcess(t *testing.T) {
	e := newEnv(t)
	create := map[string]any{"requests": items(3, func(i int) string { return fmt.Sprintf("p%d", i) })}
	e.s.InjectFault(Fault{Endpoint: EndpointCreate, Status: 503, AfterProcess: true, RetryAfter: time.Second})
	r := e.do("POST", "/v1/messages/batches", create)
	errType(t, r, 503, "api_error")
	if r.header.Get("retry-after") != "1" || r.header.Get("Content-Type") != "application/json" {
		t.Fatalf("headers %v", r.header)
	}
	// The batch was created all the same, and listing finds it.
	st := e.s.Stats()
	if len(st.Submissions) != 3 || st.FaultsFired != 1 {
		t.Fatalf("stats %+v", st)
	}
	id := st.Submissions[0].BatchID
	l := e.do("GET", "/v1/messages/batches", nil).json(t)["data"].([]any)
	if len(l) != 1 || l[0].(map[string]any)["id"] != id {
		t.Fatalf("list %v", l)
	}

	// Any endpoint: a cancel that answers 500 but cancels.
	e.s.InjectFault(Fault{Endpoint: EndpointCancel, Status: 500, AfterProcess: true})
	errType(t, e.do("POST", "/v1/messages/batches/"+id+"/cancel", nil), 500, "api_error")
	if b := e.get(id); b["processing_status"] != "canceling" {
		t.Fatalf("cancel not processed: %v", b)
	}

	// A request the emulator refuses is refused as before, but the caller
	// sees the injected status.
	e.s.InjectFault(Fault{Endpoint: EndpointCreate, Status: 529, AfterProcess: true})
	errType(t, e.do("POST", "/v1/messages/batches", map[string]any{"requests": []any{}}), 529, "overloaded_error")
	if n := len(e.s.Stats().Submissions); n != 3 {
		t.Fatalf("an invalid create created a batch: %d submissions", n)
	}

	// Without Status, AfterProcess is used up and the request is served.
	e.s.InjectFault(Fault{Endpoint: EndpointCreate, AfterProcess: true})
	if r := e.do("POST", "/v1/messages/batches", create); r.status != 200 || e.s.PendingFaults() != 0 {
		t.Fatalf("AfterProcess without Status: %d %s", r.status, r.body)
	}
}

// sendRaw sends a POST with the default key and version and reports the
// transport error, if any.
func (e *env) sendRaw(path string, body []byte) (*http.Response, error) {
	req, _ := http.NewRequest("POST", e.ts.URL+path, bytes.NewReader(body))
	req.Header.Set("x-api-key", "key-a")
	req.Header.Set("anthropic-version", "2023-06-01")
	res, err := e.ts.Client().Do(req)
	if err == nil {
		res.Body.Close()
	}
	return res, err
}

func (e *env) list() []map[string]any {
	e.t.Helper()
	r := e.do("GET", "/v1/messages/batches", nil)
	if r.status != 200 {
		e.t.Fatalf("list: %d %s", r.status, r.body)
	}
	var out []map[string]any
	for _, b := range r.json(e.t)["data"].([]any) {
		out = append(out, b.(map[string]any))
	}
	return out
}

func TestFaultLandAfter(t *testing.T) {
	e := newEnv(t)
	t0 := e.clock.Now()
	create := mustJSON(t, map[string]any{"requests": items(3, func(i int) string { return fmt.Sprintf("late %d", i) })})
	e.s.InjectFault(Fault{Endpoint: EndpointCreate, LandAfter: 5 * time.Second})
	if _, err := e.sendRaw("/v1/messages/batches", create); err == nil {
		t.Fatal("LandAfter: the create was answered")
	}
	if st := e.s.Stats(); len(st.Submissions) != 0 || st.Calls[EndpointCreate] != 1 || st.FaultsFired != 1 || e.s.PendingFaults() != 0 {
		t.Fatalf("before landing: %+v", st)
	}
	// A create answered normally in the meantime.
	e.clock.Advance(3 * time.Second)
	early := e.create(items(1, func(int) string { return "on time" }))
	e.clock.Advance(time.Second + 999*time.Millisecond)
	if l := e.list(); len(l) != 1 {
		t.Fatalf("landed early: %v", l)
	}
	e.clock.Advance(time.Millisecond)
	l := e.list()
	if len(l) != 2 || l[1]["id"] != early["id"] {
		t.Fatalf("list after landing: %v", l)
	}
	late := l[0]
	if late["created_at"] != rfc3339(t0.Add(5*time.Second)) || late["expires_at"] != rfc3339(t0.Add(5*time.Second+24*time.Hour)) ||
		late["processing_status"] != "in_progress" {
		t.Fatalf("landed batch %v", late)
	}
	id := late["id"].(string)
	if st := e.s.Stats(); len(st.Submissions) != 4 || st.Submissions[1].BatchID != id || st.Batches[id].Requests != 3 {
		t.Fatalf("stats after landing: %+v", st)
	}
	// It runs from its landing time like any batch.
	e.clock.Advance(20 * time.Second)
	if b := e.get(id); b["processing_status"] != "ended" {
		t.Fatalf("not ended: %v", b)
	}
	for _, r := range e.results(id) {
		if r.Result.Type != "succeeded" {
			t.Fatalf("result %+v", r)
		}
	}

	// With Status, the client gets that error and the batch lands later.
	e.s.InjectFault(Fault{Endpoint: EndpointCreate, LandAfter: 2 * time.Second, Status: 504})
	errType(t, e.do("POST", "/v1/messages/batches", create), 504, "timeout_error")
	if n := len(e.list()); n != 2 {
		t.Fatalf("landed at once: %d batches", n)
	}
	// Stats alone sees the landing too.
	e.clock.Advance(2 * time.Second)
	if st := e.s.Stats(); len(st.Submissions) != 7 {
		t.Fatalf("stats after the second landing: %d submissions", len(st.Submissions))
	}

	// A create the emulator would refuse lands nothing; nor does a
	// message.
	e.s.InjectFault(Fault{Endpoint: EndpointCreate, LandAfter: time.Second})
	if _, err := e.sendRaw("/v1/messages/batches", []byte(`{"requests":[]}`)); err == nil {
		t.Fatal("invalid late create answered")
	}
	e.s.InjectFault(Fault{Endpoint: EndpointMessages, LandAfter: time.Second})
	if _, err := e.sendRaw("/v1/messages", mustJSON(t, msgBody("x"))); err == nil {
		t.Fatal("late message answered")
	}
	e.clock.Advance(time.Hour)
	if n := len(e.list()); n != 3 || len(e.s.Stats().Submissions) != 7 {
		t.Fatalf("a refused late create landed: %d batches", n)
	}
}

func TestFaultPersistentRetrieveAndList(t *testing.T) {
	e := newEnv(t)
	id := e.create(items(2, func(int) string { return "a" }))["id"].(string)
	other := e.create(items(1, func(int) string { return "b" }))["id"].(string)

	// A batch that stays "not found" (as after a workspace mix-up), while
	// the others and the listing work.
	e.s.InjectFault(Fault{Endpoint: EndpointRetrieve, PathPrefix: "/v1/messages/batches/" + id, Status: 404, Times: -1})
	for range 3 {
		errType(t, e.do("GET", "/v1/messages/batches/"+id, nil), 404, "not_found_error")
	}
	e.get(other)
	if l := e.list(); len(l) != 2 {
		t.Fatalf("list %v", l)
	}
	e.clock.Advance(time.Minute)
	if r := e.do("GET", "/v1/messages/batches/"+id+"/results", nil); r.status != 200 {
		t.Fatalf("a retrieve fault hit results: %d", r.status)
	}

	// A key revoked for good: every list and every retrieve answers 401.
	e.s.ClearFaults()
	e.s.InjectFault(Fault{Endpoint: EndpointList, Status: 401, Times: -1})
	e.s.InjectFault(Fault{Endpoint: EndpointRetrieve, Status: 401, Times: -1})
	for range 3 {
		errType(t, e.do("GET", "/v1/messages/batches", nil), 401, "authentication_error")
		errType(t, e.do("GET", "/v1/messages/batches?limit=1&after_id="+other, nil), 401, "authentication_error")
		errType(t, e.do("GET", "/v1/messages/batches/"+id, nil), 401, "authentication_error")
	}
	if e.s.PendingFaults() != 2 {
		t.Fatalf("%d faults pending", e.s.PendingFaults())
	}
	st := e.s.Stats()
	if st.Calls[EndpointList] != 7 || st.Batches[id].Retrieves != 6 || st.FaultsFired != 12 {
		t.Fatalf("stats %+v", st)
	}
	e.s.ClearFaults()
	if e.get(id)["processing_status"] != "ended" || len(e.list()) != 2 {
		t.Fatal("faults outlived ClearFaults")
	}
}

func TestSubmissionCountsAndBatchesCreated(t *testing.T) {
	e := newEnv(t)
	prompts := func(names ...string) map[string]any {
		var its []item
		for i, n := range names {
			its = append(its, item{fmt.Sprintf("c%d-%d", len(e.s.Stats().Submissions), i), msgBody(n)})
		}
		return map[string]any{"requests": its}
	}
	createAs := func(key string, body map[string]any) {
		t.Helper()
		if r := e.do("POST", "/v1/messages/batches", body, "X-Api-Key", key); r.status != 200 {
			t.Fatalf("create: %d %s", r.status, r.body)
		}
	}
	createAs("key-a", prompts("p0", "p1"))
	// A create answered 503 that did create its batch, then the retry of
	// one of its prompts under a new custom_id: p2 is paid twice.
	e.s.InjectFault(Fault{Endpoint: EndpointCreate, Status: 503, AfterProcess: true})
	errType(t, e.do("POST", "/v1/messages/batches", prompts("p2")), 503, "api_error")
	createAs("key-a", prompts("p2"))
	// Another key; a create refused before processing; one that lands late.
	createAs("key-b", prompts("p3"))
	e.s.InjectFault(Fault{Endpoint: EndpointCreate, Status: 500})
	errType(t, e.do("POST", "/v1/messages/batches", prompts("p9")), 500, "api_error")
	e.s.InjectFault(Fault{Endpoint: EndpointCreate, Status: 504, LandAfter: time.Minute})
	errType(t, e.do("POST", "/v1/messages/batches", prompts("p4"), "X-Api-Key", "key-b"), 504, "timeout_error")
	// Params the batch will reject are counted by their hash.
	createAs("key-a", map[string]any{"requests": []any{map[string]any{"custom_id": "bad", "params": map[string]any{"model": "m"}}}})

	if a, b, c := e.s.BatchesCreated("key-a"), e.s.BatchesCreated("key-b"), e.s.BatchesCreated("key-c"); a != 4 || b != 1 || c != 0 {
		t.Fatalf("batches created: %d %d %d", a, b, c)
	}
	got := e.s.SubmissionCounts()
	badKey := "params:" + paramsHash(json.RawMessage(`{"model":"m"}`))
	want := map[string]int{"p0": 1, "p1": 1, "p2": 2, "p3": 1, badKey: 1}
	if !maps.Equal(got, want) {
		t.Fatalf("counts %v, want %v", got, want)
	}

	// The late create counts once it has landed; deleting a batch changes
	// nothing.
	e.clock.Advance(time.Minute)
	if n := e.s.BatchesCreated("key-b"); n != 2 {
		t.Fatalf("key-b: %d batches after landing", n)
	}
	e.clock.Advance(time.Minute)
	first := e.s.Stats().Submissions[0].BatchID
	if r := e.do("DELETE", "/v1/messages/batches/"+first, nil); r.status != 200 {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	want["p4"] = 1
	if got := e.s.SubmissionCounts(); !maps.Equal(got, want) || e.s.BatchesCreated("key-a") != 4 {
		t.Fatalf("counts %v, want %v", got, want)
	}

	// The stats endpoint carries the texts, so its Stats count the same.
	var st Stats
	if err := json.Unmarshal(e.raw("GET", StatsPath, nil, http.Header{}).body, &st); err != nil {
		t.Fatal(err)
	}
	if got := st.SubmissionCounts(); !maps.Equal(got, want) || st.Submissions[0].Text != "p0" {
		t.Fatalf("stats endpoint counts %v", got)
	}
}
