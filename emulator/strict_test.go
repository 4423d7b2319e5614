package emulator

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// A model the emulator does not serve is refused as the real API refuses
// it: 404 not_found_error "model: <id>", on sync, streamed and
// count_tokens calls, and as an errored result in a batch. The default
// models, their aliases and TestModel are served.
func TestUnknownModelRefused(t *testing.T) {
	e := newEnv(t)
	for _, body := range []map[string]any{
		msgBody("hi", "model", "claude-nope"),
		msgBody("hi", "model", "claude-nope", "stream", true),
	} {
		r := e.do("POST", "/v1/messages", body)
		errType(t, r, 404, "not_found_error")
		want := `{"type":"error","error":{"type":"not_found_error","message":"model: claude-nope"},"request_id":"` + r.header.Get("request-id") + `"}`
		if string(r.body) != want {
			t.Errorf("body %s, want %s", r.body, want)
		}
	}
	ct := map[string]any{"model": "claude-nope", "messages": []any{map[string]any{"role": "user", "content": "x"}}}
	errType(t, e.do("POST", "/v1/messages/count_tokens", ct), 404, "not_found_error")
	// A malformed body is refused for what is wrong with it first.
	errType(t, e.do("POST", "/v1/messages", map[string]any{"model": "claude-nope"}), 400, "invalid_request_error")

	for _, m := range []string{"claude-sonnet-4-6", "claude-haiku-4-5", "claude-haiku-4-5-20251001", "claude-opus-5-5", TestModel} {
		if r := e.do("POST", "/v1/messages", msgBody("hi", "model", m)); r.status != 200 {
			t.Errorf("%s: %d %s", m, r.status, r.body)
		}
	}

	b := e.create([]item{{"known", msgBody("a")}, {"unknown", msgBody("b", "model", "claude-nope")}})
	e.clock.Advance(time.Minute)
	if g := e.get(b["id"].(string)); counts(g)["errored"] != 1 || counts(g)["succeeded"] != 1 {
		t.Fatalf("counts %v", g["request_counts"])
	}
	for _, l := range e.results(b["id"].(string)) {
		if l.CustomID == "unknown" && (l.Result.Type != "errored" || l.Result.Error.Error.Type != "not_found_error" ||
			l.Result.Error.Error.Message != "model: claude-nope") {
			t.Errorf("unknown model's result %+v", l.Result)
		}
	}
}

// Models, when set, are all the emulator serves, with the aliases that
// lead to them.
func TestModelsSetServed(t *testing.T) {
	e := newEnv(t)
	e.s.Models = []string{"claude-haiku-4-5-20251001"}
	for m, status := range map[string]int{"claude-haiku-4-5-20251001": 200, "claude-haiku-4-5": 200,
		"claude-sonnet-4-6": 404, TestModel: 200} {
		if r := e.do("POST", "/v1/messages", msgBody("hi", "model", m)); r.status != status {
			t.Errorf("%s: %d, want %d", m, r.status, status)
		}
	}
}

// answerModel decodes the model an answer names.
func answerModel(t *testing.T, body []byte) string {
	t.Helper()
	var m struct{ Model string }
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	return m.Model
}

// An answer to an alias names the dated id, as the real API's do, in sync,
// streamed and batched answers; ModelIDs replaces the default map.
func TestDatedModelAnswers(t *testing.T) {
	e := newEnv(t)
	if got := answerModel(t, e.do("POST", "/v1/messages", msgBody("hi", "model", "claude-haiku-4-5")).body); got != "claude-haiku-4-5-20251001" {
		t.Errorf("sync answer names %q", got)
	}
	if got := answerModel(t, e.do("POST", "/v1/messages", msgBody("hi", "model", "claude-sonnet-4-6")).body); got != "claude-sonnet-4-6" {
		t.Errorf("an undated id answered as %q", got)
	}
	stream := e.do("POST", "/v1/messages", msgBody("hi", "model", "claude-opus-4-0", "stream", true))
	if !strings.Contains(string(stream.body), `"model":"claude-opus-4-20250514"`) {
		t.Errorf("stream names no dated id: %s", stream.body)
	}
	b := e.create([]item{{"a", msgBody("a", "model", "claude-haiku-4-5")}})
	e.clock.Advance(time.Minute)
	e.get(b["id"].(string))
	if l := e.results(b["id"].(string)); answerModel(t, l[0].Result.Message) != "claude-haiku-4-5-20251001" {
		t.Errorf("batch answer %s", l[0].Result.Message)
	}

	own := newEnv(t)
	own.s.ModelIDs = map[string]string{}
	if got := answerModel(t, own.do("POST", "/v1/messages", msgBody("hi", "model", "claude-haiku-4-5-20251001")).body); got != "claude-haiku-4-5-20251001" {
		t.Errorf("empty map: %q", got)
	}
	if got := answerModel(t, own.do("POST", "/v1/messages", msgBody("hi", "model", "claude-haiku-4-5")).body); got != "claude-haiku-4-5" {
		t.Errorf("empty map: an alias answered as %q", got)
	}
	own2 := newEnv(t)
	own2.s.ModelIDs = map[string]string{"claude-sonnet-4-6": "claude-sonnet-4-6-20260217"}
	if got := answerModel(t, own2.do("POST", "/v1/messages", msgBody("hi", "model", "claude-sonnet-4-6")).body); got != "claude-sonnet-4-6-20260217" {
		t.Errorf("own map: %q", got)
	}
}

// Messages carry usage.inference_geo and no container member, in plain and
// streamed answers and in batch results.
func TestMessageShape(t *testing.T) {
	e := newEnv(t)
	var m map[string]any
	if err := json.Unmarshal(e.do("POST", "/v1/messages", msgBody("hi")).body, &m); err != nil {
		t.Fatal(err)
	}
	if _, ok := m["container"]; ok {
		t.Errorf("a container member: %v", m)
	}
	if _, ok := m["stop_details"]; !ok {
		t.Errorf("no stop_details: %v", m)
	}
	if u := m["usage"].(map[string]any); u["inference_geo"] != "not_available" || u["service_tier"] != "standard" {
		t.Errorf("usage %v", u)
	}
	stream := string(e.do("POST", "/v1/messages", msgBody("hi", "stream", true)).body)
	if strings.Contains(stream, "container") || !strings.Contains(stream, `"inference_geo":"not_available"`) {
		t.Errorf("stream %s", stream)
	}
	b := e.create([]item{{"a", msgBody("a")}})
	e.clock.Advance(time.Minute)
	e.get(b["id"].(string))
	msg := string(e.results(b["id"].(string))[0].Result.Message)
	if strings.Contains(msg, "container") || !strings.Contains(msg, `"service_tier":"batch","inference_geo":"not_available"`) {
		t.Errorf("batch message %s", msg)
	}
}

// A GET of a batch still processing answers Retry-After: 10, as the real
// API does; an ended batch's does not. Results come as an attachment.
func TestBatchRetryAfter(t *testing.T) {
	e := newEnv(t)
	id := e.create([]item{{"a", msgBody("a")}})["id"].(string)
	r := e.do("GET", "/v1/messages/batches/"+id, nil)
	if got := r.header.Get("Retry-After"); got != "10" {
		t.Errorf("running batch: Retry-After %q, want 10", got)
	}
	if got := e.do("GET", "/v1/messages/batches", nil).header.Get("Retry-After"); got != "" {
		t.Errorf("list: Retry-After %q", got)
	}
	e.clock.Advance(time.Minute)
	r = e.do("GET", "/v1/messages/batches/"+id, nil)
	if r.json(t)["processing_status"] != "ended" || r.header.Get("Retry-After") != "" {
		t.Errorf("ended batch: %s, Retry-After %q", r.body, r.header.Get("Retry-After"))
	}
	res := e.do("GET", "/v1/messages/batches/"+id+"/results", nil)
	if cd := res.header.Get("Content-Disposition"); cd != "attachment; filename*=utf-8''"+id+"_results.jsonl" {
		t.Errorf("Content-Disposition %q", cd)
	}

	for d, want := range map[time.Duration]string{1500 * time.Millisecond: "2", -1: ""} {
		o := newEnv(t)
		o.s.BatchRetryAfter = d
		id := o.create([]item{{"a", msgBody("a")}})["id"].(string)
		if got := o.do("GET", "/v1/messages/batches/"+id, nil).header.Get("Retry-After"); got != want {
			t.Errorf("BatchRetryAfter %v: %q, want %q", d, got, want)
		}
	}
}
