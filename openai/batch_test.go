package openai_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/dispatch"
	"github.com/llmfleet/llmfleet/openai"
	"github.com/llmfleet/llmfleet/openaiemu"
)

// openBatching opens a dispatcher that batches over an emulator, its
// pools going out a second after their first request: callers started
// together share a pool however slowly a loaded machine starts them.
func openBatching(t *testing.T, emu *openaiemu.Server) *dispatch.Dispatcher {
	t.Helper()
	srv := httptest.NewServer(emu)
	t.Cleanup(srv.Close)
	d := &dispatch.Dispatcher{Providers: []llmfleet.Provider{&openai.Provider{BaseURL: srv.URL}},
		Policy: dispatch.Policy{BatchWindow: time.Second, BatchMinSize: 100, PollInterval: 20 * time.Millisecond,
			SyncLatencyPrior: time.Second, RescueMargin: time.Millisecond, NoRescue: true}}
	if err := d.Open(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close(context.Background()) })
	return d
}

// TestBatchRoute: chat, responses and embeddings requests of two keys go
// out in batches of their own key and endpoint, and each caller gets the
// body the endpoint answers, billed once.
func TestBatchRoute(t *testing.T) {
	emu := &openaiemu.Server{BatchTurnaround: 50 * time.Millisecond}
	d := openBatching(t, emu)
	type call struct {
		key, endpoint, body, want string
	}
	calls := []call{
		{"sk-alice", "", string(chat("gpt-4.1", "alice one")), `"object":"chat.completion"`},
		{"sk-alice", "", string(chat("gpt-4.1", "alice two")), `"object":"chat.completion"`},
		{"sk-bob", "", string(chat("gpt-4.1", "bob one")), `"object":"chat.completion"`},
		{"sk-alice", "/v1/responses", `{"model":"o3","input":"alice three"}`, `"object":"response"`},
		{"sk-bob", "/v1/embeddings", `{"model":"text-embedding-3-small","input":"bob two"}`, `"object":"list"`},
	}
	var wg sync.WaitGroup
	for _, c := range calls {
		wg.Go(func() {
			resp, err := d.SubmitBatch(context.Background(), 0, &llmfleet.Request{Provider: "openai",
				Credential: llmfleet.Credential{APIKey: c.key}, Endpoint: c.endpoint, Body: []byte(c.body)})
			if err != nil {
				t.Errorf("%s %s: %v", c.key, c.body, err)
				return
			}
			if resp.Route != llmfleet.RouteBatch || resp.StatusCode != 200 || !strings.Contains(string(resp.Body), c.want) || resp.BatchID == "" {
				t.Errorf("%s: %+v %s", c.body, resp, resp.Body)
			}
			prompt, _, _ := strings.Cut(strings.SplitN(c.body, `"content":"`, 2)[len(strings.SplitN(c.body, `"content":"`, 2))-1], `"`)
			if c.endpoint == "" && !strings.Contains(string(resp.Body), "Answer to: "+prompt+`"`) {
				t.Errorf("%s: got another caller's answer: %s", c.body, resp.Body)
			}
		})
	}
	wg.Wait()
	s := emu.Stats()
	for _, p := range []string{"alice one", "alice two", "bob one", "alice three", "bob two"} {
		if s.Billed[p] != 1 {
			t.Errorf("%q billed %d times", p, s.Billed[p])
		}
	}
	if got := d.Stats().BatchesSubmitted; got != 4 { // alice chat, bob chat, alice responses, bob embeddings
		t.Errorf("%d batches, want 4", got)
	}
}

// TestBatchFailedAfterCreate: a batch that fails for the enqueued-token
// limit after its create sends its budgeted requests sync, and answers the
// unbudgeted ones with the provider's message.
func TestBatchFailedAfterCreate(t *testing.T) {
	emu := &openaiemu.Server{BatchTurnaround: 50 * time.Millisecond, EnqueuedTokenLimit: func(string) int { return 1 }}
	d := openBatching(t, emu)
	cred := llmfleet.Credential{APIKey: "sk-a"}
	var wg sync.WaitGroup
	var budgeted *llmfleet.Response
	var unbudgetedErr, budgetedErr error
	wg.Go(func() {
		budgeted, budgetedErr = d.SubmitBatch(context.Background(), time.Hour, &llmfleet.Request{Provider: "openai", Credential: cred, Body: chat("gpt-4.1", "patient")})
	})
	wg.Go(func() {
		_, unbudgetedErr = d.SubmitBatch(context.Background(), 0, &llmfleet.Request{Provider: "openai", Credential: cred, Body: chat("gpt-4.1", "unbudgeted")})
	})
	wg.Wait()
	if budgetedErr != nil || budgeted.Route != llmfleet.RouteSync {
		t.Fatalf("budgeted: %+v, %v", budgeted, budgetedErr)
	}
	var pe *llmfleet.Error
	if !errors.As(unbudgetedErr, &pe) || pe.StatusCode != 429 || !strings.Contains(pe.Message, "Enqueued token limit") {
		t.Fatalf("unbudgeted: %v", unbudgetedErr)
	}
	if s := emu.Stats(); s.Billed["patient"] != 1 || s.Billed["unbudgeted"] != 0 {
		t.Fatalf("billed %v", s.Billed)
	}
}

// TestFindBatchByTag: a batch is found by the tag in its metadata; a tag
// never used is not found.
func TestFindBatchByTag(t *testing.T) {
	emu := &openaiemu.Server{}
	srv := httptest.NewServer(emu)
	defer srv.Close()
	p := &openai.Provider{BaseURL: srv.URL}
	cred := llmfleet.Credential{APIKey: "sk-a"}
	ctx := context.Background()
	since := time.Now()
	b, err := p.CreateBatch(ctx, cred, "lfb_one", nil, []llmfleet.BatchItem{{CustomID: "lfb_one-0", Params: chat("m", "x")}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tag := range []string{"lfb_other", "lfb_on"} {
		if _, err := p.CreateBatch(ctx, cred, tag, nil, []llmfleet.BatchItem{{CustomID: tag + "-0", Params: chat("m", "y")}}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := p.FindBatch(ctx, cred, llmfleet.BatchQuery{Tag: "lfb_one", Since: since, Size: 1})
	if err != nil || got == nil || got.ID != b.ID {
		t.Fatalf("FindBatch = %+v, %v; want %s", got, err, b.ID)
	}
	if got, err := p.FindBatch(ctx, cred, llmfleet.BatchQuery{Tag: "lfb_never", Since: since}); got != nil || err != nil {
		t.Fatalf("FindBatch of an unused tag = %+v, %v", got, err)
	}
}

// TestReadResults: every kind of line becomes its result type.
func TestReadResults(t *testing.T) {
	lines := `{"id":"r1","custom_id":"a","response":{"status_code":200,"request_id":"q","body":{"model":"gpt-5","usage":{"prompt_tokens":3,"completion_tokens":2}}},"error":null}
{"id":"r2","custom_id":"b","response":{"status_code":400,"request_id":"q2","body":{"error":{"message":"bad","type":"invalid_request_error","param":null,"code":null}}},"error":null}
{"id":"r3","custom_id":"c","response":null,"error":{"code":"batch_expired","message":"late"}}
{"id":"r4","custom_id":"d","response":null,"error":{"code":"batch_cancelled","message":"off"}}
{"id":"r5","custom_id":"e","response":null,"error":{"code":"request_timeout","message":"slow"}}
`
	got := map[string]llmfleet.BatchResult{}
	if err := openai.ReadResults(strings.NewReader(lines), func(r llmfleet.BatchResult) error { got[r.CustomID] = r; return nil }); err != nil {
		t.Fatal(err)
	}
	if r := got["a"]; r.Type != llmfleet.ResultSucceeded || r.Model != "gpt-5" || r.Usage.InputTokens != 3 || r.Usage.OutputTokens != 2 {
		t.Errorf("a: %+v", r)
	}
	if r := got["b"]; r.Type != llmfleet.ResultErrored || r.Error.StatusCode != 400 || r.Error.Message != "bad" || len(r.Error.Body) == 0 {
		t.Errorf("b: %+v", r)
	}
	if got["c"].Type != llmfleet.ResultExpired || got["d"].Type != llmfleet.ResultCanceled {
		t.Errorf("c, d: %+v %+v", got["c"], got["d"])
	}
	if r := got["e"]; r.Type != llmfleet.ResultErrored || r.Error.Type != "request_timeout" {
		t.Errorf("e: %+v", r)
	}
	if err := openai.ReadResults(strings.NewReader("{not json\n"), func(llmfleet.BatchResult) error { return nil }); err == nil {
		t.Error("a malformed line was read")
	}
}

// FuzzReadResults: the result-line parser never panics and gives every
// result a custom_id and a type.
func FuzzReadResults(f *testing.F) {
	f.Add(`{"custom_id":"a","response":{"status_code":200,"body":{}}}`)
	f.Add(`{"custom_id":"b","error":{"code":"batch_expired"}}` + "\n\n" + `{"custom_id":"c","response":{"status_code":500,"body":"x"}}`)
	f.Fuzz(func(t *testing.T, content string) {
		_ = openai.ReadResults(strings.NewReader(content), func(r llmfleet.BatchResult) error {
			if r.CustomID == "" || r.Type == "" || (r.Type == llmfleet.ResultErrored && r.Error == nil) {
				t.Fatalf("result %+v of %q", r, content)
			}
			return nil
		})
	})
}
