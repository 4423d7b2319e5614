package emulator

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

type item struct {
	CustomID string         `json:"custom_id"`
	Params   map[string]any `json:"params"`
}

func items(n int, text func(i int) string) []item {
	var out []item
	for i := range n {
		out = append(out, item{fmt.Sprintf("req-%d", i), msgBody(text(i))})
	}
	return out
}

func (e *env) create(its []item) map[string]any {
	e.t.Helper()
	r := e.do("POST", "/v1/messages/batches", map[string]any{"requests": its})
	if r.status != 200 {
		e.t.Fatalf("create: %d %s", r.status, r.body)
	}
	return r.json(e.t)
}

func (e *env) get(id string) map[string]any {
	e.t.Helper()
	r := e.do("GET", "/v1/messages/batches/"+id, nil)
	if r.status != 200 {
		e.t.Fatalf("retrieve: %d %s", r.status, r.body)
	}
	return r.json(e.t)
}

type resultLine struct {
	CustomID string `json:"custom_id"`
	Result   struct {
		Type    string          `json:"type"`
		Message json.RawMessage `json:"message"`
		Error   struct {
			Type  string `json:"type"`
			Error struct {
				Type    string `json:"type"`
				Message string `json:"message"`
			} `json:"error"`
			RequestID string `json:"request_id"`
		} `json:"error"`
	} `json:"result"`
}

func (e *env) results(id string) []resultLine {
	e.t.Helper()
	r := e.do("GET", "/v1/messages/batches/"+id+"/results", nil, "Accept", "application/x-jsonl")
	if r.status != 200 {
		e.t.Fatalf("results: %d %s", r.status, r.body)
	}
	var out []resultLine
	sc := bufio.NewScanner(bytes.NewReader(r.body))
	for sc.Scan() {
		var l resultLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			e.t.Fatalf("line %q: %v", sc.Text(), err)
		}
		out = append(out, l)
	}
	return out
}

func counts(m map[string]any) map[string]int {
	out := map[string]int{}
	for k, v := range m["request_counts"].(map[string]any) {
		out[k] = int(v.(float64))
	}
	return out
}

func TestBatchLifecycle(t *testing.T) {
	e := newEnv(t)
	its := items(50, func(i int) string { return fmt.Sprintf("question %d", i) })
	b := e.create(its)
	id := b["id"].(string)
	if !strings.HasPrefix(id, "msgbatch_") || b["type"] != "message_batch" || b["processing_status"] != "in_progress" {
		t.Fatalf("created %v", b)
	}
	if c := counts(b); c["processing"] != 50 || c["succeeded"] != 0 {
		t.Fatalf("counts %v", c)
	}
	if b["results_url"] != nil || b["ended_at"] != nil || b["cancel_initiated_at"] != nil || b["archived_at"] != nil {
		t.Fatalf("nulls %v", b)
	}
	created, _ := time.Parse(time.RFC3339, b["created_at"].(string))
	expires, _ := time.Parse(time.RFC3339, b["expires_at"].(string))
	if !created.Equal(e.clock.Now()) || expires.Sub(created) != 24*time.Hour {
		t.Fatalf("times %v %v", created, expires)
	}
	errType(t, e.do("GET", "/v1/messages/batches/"+id+"/results", nil), 400, "invalid_request_error")
	errType(t, e.do("DELETE", "/v1/messages/batches/"+id, nil), 400, "invalid_request_error")

	e.clock.Advance(9 * time.Second) // turnaround is 10s..19s
	if g := e.get(id); g["processing_status"] != "in_progress" || counts(g)["processing"] != 50 {
		t.Fatalf("still running: %v", g)
	}
	e.clock.Advance(11 * time.Second)
	g := e.get(id)
	if g["processing_status"] != "ended" || counts(g)["succeeded"] != 50 || counts(g)["processing"] != 0 {
		t.Fatalf("ended: %v", g)
	}
	wantURL := e.ts.URL + "/v1/messages/batches/" + id + "/results"
	if g["results_url"] != wantURL || g["ended_at"] == nil {
		t.Fatalf("results_url %v, want %s", g["results_url"], wantURL)
	}
	lines := e.results(id)
	if len(lines) != 50 {
		t.Fatalf("%d lines", len(lines))
	}
	inOrder := true
	for i, l := range lines {
		inOrder = inOrder && l.CustomID == its[i].CustomID
		var idx int
		fmt.Sscanf(l.CustomID, "req-%d", &idx)
		var m struct {
			Content []struct{ Text string }
			Usage   struct {
				ServiceTier string `json:"service_tier"`
			}
		}
		json.Unmarshal(l.Result.Message, &m)
		want, _ := ReplyText(mustJSON(t, its[idx].Params))
		if l.Result.Type != "succeeded" || len(m.Content) != 1 || m.Content[0].Text != want || m.Usage.ServiceTier != "batch" {
			t.Fatalf("line %s: %+v", l.CustomID, l.Result)
		}
	}
	if inOrder {
		t.Error("results not shuffled")
	}
	// Both Accept values serve the same bytes.
	r1 := e.do("GET", "/v1/messages/batches/"+id+"/results", nil, "Accept", "application/binary")
	r2 := e.do("GET", "/v1/messages/batches/"+id+"/results?beta=true", nil, "Accept", "application/x-jsonl")
	if r1.status != 200 || !bytes.Equal(r1.body, r2.body) {
		t.Fatal("results differ by Accept")
	}
	// Another key sees nothing.
	errType(t, e.do("GET", "/v1/messages/batches/"+id, nil, "X-Api-Key", "key-b"), 404, "not_found_error")
	// Delete after end.
	if r := e.do("DELETE", "/v1/messages/batches/"+id, nil); r.status != 200 || r.json(t)["type"] != "message_batch_deleted" {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	errType(t, e.do("GET", "/v1/messages/batches/"+id, nil), 404, "not_found_error")

	st := e.s.Stats()
	if len(st.Submissions) != 50 || len(st.DuplicateParams()) != 0 || st.Batches[id].Retrieves != 4 || st.Calls[EndpointCreate] != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestBatchCancel(t *testing.T) {
	e := newEnv(t)
	e.s.CancelDelay = 2 * time.Second
	b := e.create(items(200, func(i int) string { return fmt.Sprintf("q%d", i) }))
	id := b["id"].(string)
	e.clock.Advance(5 * time.Second) // within the 10s..19s turnaround
	r := e.do("POST", "/v1/messages/batches/"+id+"/cancel", nil)
	if r.status != 200 {
		t.Fatalf("cancel %d %s", r.status, r.body)
	}
	c := r.json(t)
	if c["processing_status"] != "canceling" || c["cancel_initiated_at"] == nil || counts(c)["processing"] != 200 {
		t.Fatalf("cancel answer %v", c)
	}
	e.clock.Advance(time.Second)
	if g := e.get(id); g["processing_status"] != "canceling" {
		t.Fatalf("still canceling: %v", g)
	}
	e.clock.Advance(time.Second)
	g := e.get(id)
	cn := counts(g)
	if g["processing_status"] != "ended" || cn["succeeded"] == 0 || cn["canceled"] == 0 || cn["succeeded"]+cn["canceled"] != 200 {
		t.Fatalf("after cancel: %v", g)
	}
	n := map[string]int{}
	for _, l := range e.results(id) {
		n[l.Result.Type]++
	}
	if n["succeeded"] != cn["succeeded"] || n["canceled"] != cn["canceled"] {
		t.Fatalf("results %v, counts %v", n, cn)
	}
	errType(t, e.do("POST", "/v1/messages/batches/"+id+"/cancel", nil), 400, "invalid_request_error")
}

func TestBatchExpiry(t *testing.T) {
	e := newEnv(t)
	its := items(4, func(i int) string { return fmt.Sprintf("q%d", i) })
	its[3].Params = msgBody("slow one [turnaround:30h]")
	b := e.create(its)
	id := b["id"].(string)
	e.clock.Advance(23 * time.Hour)
	if g := e.get(id); g["processing_status"] != "in_progress" {
		t.Fatalf("%v", g)
	}
	e.clock.Advance(time.Hour)
	g := e.get(id)
	if g["processing_status"] != "ended" || g["ended_at"] != g["expires_at"] {
		t.Fatalf("expired batch %v", g)
	}
	if c := counts(g); c["succeeded"] != 3 || c["expired"] != 1 {
		t.Fatalf("counts %v", c)
	}
	for _, l := range e.results(id) {
		if (l.CustomID == "req-3") != (l.Result.Type == "expired") {
			t.Fatalf("result %+v", l)
		}
	}
	e.clock.Advance(29 * 24 * time.Hour)
	if g := e.get(id); g["archived_at"] == nil {
		t.Fatalf("not archived: %v", g)
	}
	errType(t, e.do("GET", "/v1/messages/batches/"+id+"/results", nil), 404, "not_found_error")
}

func TestBatchErroredResults(t *testing.T) {
	e := newEnv(t)
	noModel := msgBody("x")
	delete(noModel, "model")
	noMax := msgBody("x")
	delete(noMax, "max_tokens")
	cases := map[string]map[string]any{
		"stream":     msgBody("x", "stream", true),
		"max0":       msgBody("x", "max_tokens", 0),
		"nomax":      noMax,
		"nomodel":    noModel,
		"speed":      msgBody("x", "speed", "fast"),
		"nomessages": {"model": "m", "max_tokens": 10},
		"directive":  msgBody("x [error:overloaded_error]"),
		"expire":     msgBody("x [expire]"),
		"ok":         msgBody("fine"),
	}
	var its []item
	for id, p := range cases {
		its = append(its, item{id, p})
	}
	b := e.create(its)
	e.clock.Advance(time.Minute)
	g := e.get(b["id"].(string))
	if c := counts(g); c["errored"] != 7 || c["expired"] != 1 || c["succeeded"] != 1 {
		t.Fatalf("counts %v", c)
	}
	for _, l := range e.results(b["id"].(string)) {
		switch l.CustomID {
		case "ok":
			if l.Result.Type != "succeeded" {
				t.Fatalf("%+v", l)
			}
		case "expire":
			if l.Result.Type != "expired" {
				t.Fatalf("%+v", l)
			}
		default:
			want := "invalid_request_error"
			if l.CustomID == "directive" {
				want = "overloaded_error"
			}
			er := l.Result.Error
			if l.Result.Type != "errored" || er.Type != "error" || er.Error.Type != want || er.Error.Message == "" || er.RequestID == "" {
				t.Fatalf("%s: %+v", l.CustomID, l.Result)
			}
		}
	}
}

func TestBatchCreateValidation(t *testing.T) {
	e := newEnv(t)
	ok := msgBody("x")
	cases := map[string]any{
		"malformed":  "{",
		"none":       map[string]any{"requests": []any{}},
		"missing":    map[string]any{},
		"extra":      map[string]any{"requests": []any{item{"a", ok}}, "x": 1},
		"bad id":     map[string]any{"requests": []any{item{"a.b", ok}}},
		"long id":    map[string]any{"requests": []any{item{strings.Repeat("a", 65), ok}}},
		"dup":        map[string]any{"requests": []any{item{"a", ok}, item{"a", ok}}},
		"no params":  map[string]any{"requests": []any{map[string]any{"custom_id": "a"}}},
		"str params": map[string]any{"requests": []any{map[string]any{"custom_id": "a", "params": "x"}}},
	}
	for name, body := range cases {
		t.Run(name, func(t *testing.T) {
			errType(t, e.do("POST", "/v1/messages/batches", body), 400, "invalid_request_error")
		})
	}
	if n := len(e.s.Stats().Submissions); n != 0 {
		t.Fatalf("%d submissions recorded for failed creates", n)
	}
}

func TestBatchList(t *testing.T) {
	e := newEnv(t)
	var ids []string
	for i := range 7 {
		ids = append(ids, e.create(items(1, func(int) string { return fmt.Sprint(i) }))["id"].(string))
		e.clock.Advance(time.Second)
	}
	e.do("POST", "/v1/messages/batches", map[string]any{"requests": items(1, func(int) string { return "other" })}, "X-Api-Key", "key-b")
	list := func(q string) (got []string, m map[string]any) {
		t.Helper()
		r := e.do("GET", "/v1/messages/batches"+q, nil)
		if r.status != 200 {
			t.Fatalf("list %s: %d %s", q, r.status, r.body)
		}
		m = r.json(t)
		for _, d := range m["data"].([]any) {
			got = append(got, d.(map[string]any)["id"].(string))
		}
		return got, m
	}
	all, m := list("")
	if len(all) != 7 || all[0] != ids[6] || all[6] != ids[0] || m["has_more"] != false {
		t.Fatalf("default page %v %v", all, m["has_more"])
	}
	var paged []string
	after := ""
	for {
		q := "?limit=3"
		if after != "" {
			q += "&after_id=" + after
		}
		got, m := list(q)
		paged = append(paged, got...)
		if m["first_id"] != got[0] || m["last_id"] != got[len(got)-1] {
			t.Fatalf("first/last %v", m)
		}
		if m["has_more"] != true {
			break
		}
		after = m["last_id"].(string)
	}
	if strings.Join(paged, ",") != strings.Join(all, ",") {
		t.Fatalf("paged %v, want %v", paged, all)
	}
	got, m := list("?limit=2&before_id=" + ids[2])
	if len(got) != 2 || got[0] != ids[4] || got[1] != ids[3] || m["has_more"] != true {
		t.Fatalf("before page %v %v", got, m["has_more"])
	}
	if got, m := list("?after_id=" + ids[0]); len(got) != 0 || m["has_more"] != false || m["first_id"] != nil {
		t.Fatalf("empty page %v %v", got, m)
	}
	errType(t, e.do("GET", "/v1/messages/batches?limit=0", nil), 400, "invalid_request_error")
	errType(t, e.do("GET", "/v1/messages/batches?limit=1001", nil), 400, "invalid_request_error")
}
