package claude

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
)

const endedBatch = `{"id":"msgbatch_01","type":"message_batch","processing_status":"ended",` +
	`"request_counts":{"processing":0,"succeeded":2,"errored":1,"canceled":1,"expired":1},` +
	`"ended_at":"2024-09-24T19:37:24.100435Z","created_at":"2024-09-24T18:37:24.100435Z",` +
	`"expires_at":"2024-09-25T18:37:24.100435Z","cancel_initiated_at":null,"archived_at":null,` +
	`"results_url":"https://api.anthropic.com/v1/messages/batches/msgbatch_01/results"}`

func TestCreateBatchBody(t *testing.T) {
	var got []byte
	var hdr http.Header
	p, _ := newTest(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/messages/batches" {
			t.Errorf("%s %s", r.Method, r.URL.Path)
		}
		got, _ = io.ReadAll(r.Body)
		hdr = r.Header.Clone()
		io.WriteString(w, `{"id":"msgbatch_01","type":"message_batch","processing_status":"in_progress",`+
			`"request_counts":{"processing":2,"succeeded":0,"errored":0,"canceled":0,"expired":0},`+
			`"ended_at":null,"created_at":"2024-09-24T18:37:24.100435Z","expires_at":"2024-09-25T18:37:24.100435Z",`+
			`"cancel_initiated_at":null,"archived_at":null,"results_url":null}`)
	}))
	items := []llmfleet.BatchItem{
		{CustomID: "t_1-a-1", Params: []byte("{\"model\":\"m\",  \"max_tokens\":1,\n \"x\":1.50}")},
		{CustomID: "t_1-b_2", Params: []byte(`{"z":[],"model":"m"}`)},
	}
	b, err := p.CreateBatch(context.Background(), testCred, "t_1", http.Header{"Anthropic-Beta": {"x"}, "Llmfleet-Pool": {"p"}}, items)
	if err != nil {
		t.Fatal(err)
	}
	want := "{\"requests\":[{\"custom_id\":\"t_1-a-1\",\"params\":{\"model\":\"m\",  \"max_tokens\":1,\n \"x\":1.50}}," +
		`{"custom_id":"t_1-b_2","params":{"z":[],"model":"m"}}]}`
	if string(got) != want {
		t.Errorf("body\n%s\nwant\n%s", got, want)
	}
	if hdr.Get("Anthropic-Beta") != "x" || hdr.Get("Llmfleet-Pool") != "" || hdr.Get("Content-Type") != "application/json" {
		t.Errorf("headers %v", hdr)
	}
	created := time.Date(2024, 9, 24, 18, 37, 24, 100435000, time.UTC)
	if b.ID != "msgbatch_01" || b.Status != llmfleet.BatchInProgress || b.Counts.Processing != 2 ||
		!b.CreatedAt.Equal(created) || !b.ExpiresAt.Equal(created.Add(24*time.Hour)) || !b.EndedAt.IsZero() || b.ResultsURL != "" {
		t.Errorf("batch %+v", b)
	}
}

func TestCreateBatchLocalErrors(t *testing.T) {
	var calls atomic.Int32
	p, _ := newTest(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { calls.Add(1) }))
	tooMany := make([]llmfleet.BatchItem, MaxBatchRequests+1)
	for i := range tooMany {
		tooMany[i] = llmfleet.BatchItem{CustomID: fmt.Sprintf("a-%d", i), Params: []byte(`{}`)}
	}
	for name, items := range map[string][]llmfleet.BatchItem{
		"none":         nil,
		"empty params": {{CustomID: "a-1", Params: []byte(" ")}},
		"too many":     tooMany,
	} {
		_, err := p.CreateBatch(context.Background(), testCred, "a", nil, items)
		var e *llmfleet.Error
		if !errors.As(err, &e) || e.StatusCode != 400 || e.Type != "invalid_request_error" {
			t.Errorf("%s: %v", name, err)
		}
	}
	big := []llmfleet.BatchItem{{CustomID: "a-1", Params: make([]byte, MaxBatchBytes)}}
	_, err := p.CreateBatch(context.Background(), testCred, "a", nil, big)
	var e *llmfleet.Error
	if !errors.As(err, &e) || e.StatusCode != 413 || e.Type != "request_too_large" {
		t.Errorf("too large: %v", err)
	}
	if calls.Load() != 0 {
		t.Errorf("%d calls", calls.Load())
	}
}

func TestGetListCancel(t *testing.T) {
	var fails atomic.Int32
	fails.Store(1)
	p, _ := newTest(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == "GET" && r.URL.Path == "/v1/messages/batches/msgbatch_01":
			if fails.Add(-1) >= 0 {
				// A dropped GET is retried: it is idempotent.
				panic(http.ErrAbortHandler)
			}
			io.WriteString(w, endedBatch)
		case r.Method == "GET" && r.URL.Path == "/v1/messages/batches/missing":
			writeError(w, 404, "not_found_error", "no such batch")
		case r.Method == "GET" && r.URL.Path == "/v1/messages/batches":
			if r.URL.Query().Get("limit") != "2" || r.URL.Query().Get("after_id") != "msgbatch_09" {
				t.Errorf("query %v", r.URL.Query())
			}
			fmt.Fprintf(w, `{"data":[%s,%s],"has_more":true,"first_id":"msgbatch_01","last_id":"msgbatch_00"}`,
				endedBatch, strings.Replace(endedBatch, "msgbatch_01", "msgbatch_00", 1))
		case r.Method == "POST" && r.URL.Path == "/v1/messages/batches/msgbatch_01/cancel":
			io.WriteString(w, strings.Replace(endedBatch, `"ended"`, `"canceling"`, 1))
		default:
			t.Errorf("%s %s", r.Method, r.URL)
		}
	}))
	ctx := context.Background()
	b, err := p.GetBatch(ctx, testCred, "msgbatch_01")
	if err != nil {
		t.Fatal(err)
	}
	if b.Status != llmfleet.BatchEnded || b.EndedAt.IsZero() || b.Counts.Total() != 5 || b.Counts.Expired != 1 ||
		b.ResultsURL != "https://api.anthropic.com/v1/messages/batches/msgbatch_01/results" {
		t.Errorf("batch %+v", b)
	}
	_, err = p.GetBatch(ctx, testCred, "missing")
	var e *llmfleet.Error
	if !errors.As(err, &e) || e.StatusCode != 404 || e.Type != "not_found_error" {
		t.Errorf("missing: %v", err)
	}
	page, err := p.ListBatches(ctx, testCred, "msgbatch_09", 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Batches) != 2 || !page.HasMore || page.LastID != "msgbatch_00" || page.Batches[1].ID != "msgbatch_00" {
		t.Errorf("page %+v", page)
	}
	b, err = p.CancelBatch(ctx, testCred, "msgbatch_01")
	if err != nil || b.Status != llmfleet.BatchCanceling {
		t.Errorf("cancel %+v %v", b, err)
	}
}

const resultsJSONL = `{"custom_id":"a","result":{"type":"succeeded","message":{"id":"msg_a","type":"message","model":"claude-haiku-4-5","content":[],"usage":{"input_tokens":7,"output_tokens":3,"cache_read_input_tokens":2}}}}
{"custom_id":"b","result":{"type":"errored","error":{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: 0"},"request_id":"req_b"}}}
{"custom_id":"c","result":{"type":"canceled"}}

{"custom_id":"d","result":{"type":"expired"}}
{"custom_id":"e","result":{"type":"errored","error":{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}}}
`

func TestResults(t *testing.T) {
	p, _ := newTest(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/messages/batches/msgbatch_01/results" || r.Header.Get("Accept") != "application/x-jsonl" {
			t.Errorf("%s accept %q", r.URL.Path, r.Header.Get("Accept"))
		}
		io.WriteString(w, resultsJSONL)
	}))
	got := map[string]llmfleet.BatchResult{}
	var order []string
	err := p.Results(context.Background(), testCred, "msgbatch_01", func(r llmfleet.BatchResult) error {
		got[r.CustomID] = r
		order = append(order, r.CustomID)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(order, "") != "abcde" {
		t.Errorf("order %v", order)
	}
	if r := got["a"]; r.Type != llmfleet.ResultSucceeded || r.Error != nil ||
		string(r.Message) != `{"id":"msg_a","type":"message","model":"claude-haiku-4-5","content":[],"usage":{"input_tokens":7,"output_tokens":3,"cache_read_input_tokens":2}}` {
		t.Errorf("a %+v", r)
	}
	if r := got["a"]; r.Model != "claude-haiku-4-5" || r.Usage.InputTokens != 7 || r.Usage.OutputTokens != 3 || r.Usage.CacheReadInputTokens != 2 {
		t.Errorf("a: model %q, usage %+v", r.Model, r.Usage)
	}
	if r := got["b"]; r.Model != "" || r.Usage != (llmfleet.Usage{}) {
		t.Errorf("errored b: model %q, usage %+v", r.Model, r.Usage)
	}
	if r := got["b"]; r.Type != llmfleet.ResultErrored || r.Error == nil || r.Error.StatusCode != 400 ||
		r.Error.Type != "invalid_request_error" || r.Error.Message != "max_tokens: 0" || r.Error.RequestID != "req_b" {
		t.Errorf("b %+v %+v", r, r.Error)
	}
	if r := got["c"]; r.Type != llmfleet.ResultCanceled {
		t.Errorf("c %+v", r)
	}
	if r := got["d"]; r.Type != llmfleet.ResultExpired {
		t.Errorf("d %+v", r)
	}
	if r := got["e"]; r.Error == nil || r.Error.StatusCode != 529 {
		t.Errorf("e %+v", r)
	}

	stop := errors.New("stop")
	n := 0
	err = p.Results(context.Background(), testCred, "msgbatch_01", func(llmfleet.BatchResult) error {
		n++
		return stop
	})
	if err != stop || n != 1 {
		t.Errorf("fn error: %v after %d", err, n)
	}
}

func TestResultsResumeAfterBreak(t *testing.T) {
	var calls atomic.Int32
	p, sl := newTest(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			lines := strings.SplitAfter(resultsJSONL, "\n")
			// Two whole lines and half of the third, then the connection drops.
			io.WriteString(w, lines[0]+lines[1]+lines[2][:10])
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		}
		// The second fetch comes in another order.
		lines := strings.SplitAfter(strings.TrimSpace(resultsJSONL), "\n")
		for i := len(lines) - 1; i >= 0; i-- {
			io.WriteString(w, strings.TrimSpace(lines[i])+"\n")
		}
	}))
	seen := map[string]int{}
	err := p.Results(context.Background(), testCred, "msgbatch_01", func(r llmfleet.BatchResult) error {
		seen[r.CustomID]++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 5 || calls.Load() != 2 || len(sl.Slept()) != 1 {
		t.Errorf("seen %v, %d calls", seen, calls.Load())
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("%s delivered %d times", id, n)
		}
	}
}
