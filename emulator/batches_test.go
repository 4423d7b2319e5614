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

	e.clock.Add(9 * time.Second) // turnaround is 10s..19s
	if g := e.get(id); g["processing_status"] != "in_progress" || counts(g)["processing"] != 50 {
		t.Fatalf("still running: %v", g)
	}
	e.clock.Add(11 * time.Second)
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
