package openaiemu_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/llmfleet/llmfleet/openaiemu"
	"github.com/llmfleet/llmfleet/providertest"
)

func batchClient(t *testing.T, s *openaiemu.Server, key string) openai.Client {
	t.Helper()
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return openai.NewClient(option.WithBaseURL(srv.URL+"/v1/"), option.WithAPIKey(key), option.WithMaxRetries(0))
}

func jsonl(lines ...string) io.Reader { return strings.NewReader(strings.Join(lines, "\n") + "\n") }

func chatLine(id, model, prompt string) string {
	return `{"custom_id":"` + id + `","method":"POST","url":"/v1/chat/completions","body":{"model":"` + model +
		`","messages":[{"role":"user","content":"` + prompt + `"}]}}`
}

// upload and create a chat batch of lines.
func createBatch(t *testing.T, c openai.Client, meta map[string]string, lines ...string) *openai.Batch {
	t.Helper()
	ctx := context.Background()
	f, err := c.Files.New(ctx, openai.FileNewParams{File: openai.File(jsonl(lines...), "in.jsonl", "application/jsonl"), Purpose: openai.FilePurposeBatch})
	if err != nil {
		t.Fatal(err)
	}
	if f.Purpose != "batch" || f.Bytes == 0 {
		t.Fatalf("file %+v", f)
	}
	b, err := c.Batches.New(ctx, openai.BatchNewParams{InputFileID: f.ID, Endpoint: openai.BatchNewParamsEndpointV1ChatCompletions,
		CompletionWindow: openai.BatchNewParamsCompletionWindow24h, Metadata: shared.Metadata(meta)})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// outputLines downloads a file of batch output lines, by custom_id.
func outputLines(t *testing.T, c openai.Client, id string) map[string]map[string]any {
	t.Helper()
	res, err := c.Files.Content(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	out := map[string]map[string]any{}
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		var l map[string]any
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		out[l["custom_id"].(string)] = l
	}
	return out
}

// TestBatchLifecycle: upload, create with our tag, in progress until its
// turnaround, then completed with every answer in the output file (the
// sync answer's body), an injected fault in the error file, usage summed;
// only the owner sees it.
func TestBatchLifecycle(t *testing.T) {
	clk := providertest.NewManualClock(time.Unix(1_800_000_000, 0))
	s := &openaiemu.Server{Clock: clk, BatchTurnaround: time.Minute,
		Fault: func(path string) (int, string) { return 0, "" }}
	c := batchClient(t, s, "sk-alice")
	b := createBatch(t, c, map[string]string{"llmfleet_tag": "lfb_1"},
		chatLine("a", "gpt-4.1", "one"), chatLine("b", "gpt-4.1", "two"),
		`{"custom_id":"c","method":"POST","url":"/v1/chat/completions","body":{"model":"gpt-4.1"}}`)
	if b.Status != "validating" || b.Metadata["llmfleet_tag"] != "lfb_1" || b.RequestCounts.Total != 3 {
		t.Fatalf("created %+v", b)
	}
	ctx := context.Background()
	b, _ = c.Batches.Get(ctx, b.ID)
	if b.Status != "in_progress" {
		t.Fatalf("status %s, want in_progress", b.Status)
	}
	if len(s.Stats().Billed) != 0 {
		t.Fatal("billed before the batch ran")
	}
	clk.Advance(time.Minute)
	b, err := c.Batches.Get(ctx, b.ID)
	if err != nil {
		t.Fatal(err)
	}
	if b.Status != "completed" || b.RequestCounts.Completed+b.RequestCounts.Failed != 3 || b.OutputFileID == "" || b.Usage.OutputTokens == 0 {
		t.Fatalf("ended %+v", b)
	}
	out := outputLines(t, c, b.OutputFileID)
	for _, id := range []string{"a", "b"} {
		resp := out[id]["response"].(map[string]any)
		body := resp["body"].(map[string]any)
		if resp["status_code"].(float64) != 200 || body["object"] != "chat.completion" {
			t.Errorf("line %s: %v", id, out[id])
		}
	}
	errs := outputLines(t, c, b.ErrorFileID)
	if resp, ok := errs["c"]["response"].(map[string]any); !ok || resp["status_code"].(float64) != 400 ||
		resp["body"].(map[string]any)["error"] == nil || b.RequestCounts.Failed != 1 {
		t.Errorf("error line %v, counts %+v", errs["c"], b.RequestCounts)
	}
	if s.Stats().Billed["one"] != 1 || s.Stats().Billed["two"] != 1 {
		t.Errorf("billed %v", s.Stats().Billed)
	}
	// Another key sees none of it.
	bob := batchClient(t, s, "sk-bob")
	if _, err := bob.Batches.Get(ctx, b.ID); err == nil {
		t.Error("another key read the batch")
	}
	if _, err := bob.Files.Content(ctx, b.OutputFileID); err == nil {
		t.Error("another key read the output")
	}
	page, err := bob.Batches.List(ctx, openai.BatchListParams{})
	if err != nil || len(page.Data) != 0 {
		t.Errorf("another key lists %d batches, %v", len(page.Data), err)
	}
}

// TestBatchValidation: the API's checks fail the batch after its create,
// with errors.data naming the line.
func TestBatchValidation(t *testing.T) {
	s := &openaiemu.Server{}
	c := batchClient(t, s, "sk-a")
	ctx := context.Background()
	for name, lines := range map[string][]string{
		"duplicate_custom_id": {chatLine("a", "m", "x"), chatLine("a", "m", "y")},
		"mismatched_model":    {chatLine("a", "m", "x"), chatLine("b", "n", "y")},
		"invalid_url":         {strings.Replace(chatLine("a", "m", "x"), "/v1/chat/completions", "/v1/embeddings", 1)},
		"invalid_method":      {strings.Replace(chatLine("a", "m", "x"), `"POST"`, `"GET"`, 1)},
		"invalid_json_line":   {"not json"},
	} {
		b := createBatch(t, c, nil, lines...)
		b, _ = c.Batches.Get(ctx, b.ID)
		if b.Status != "failed" || len(b.Errors.Data) == 0 || b.Errors.Data[0].Code != name {
			t.Errorf("%s: status %s errors %+v", name, b.Status, b.Errors.Data)
		}
	}
	if len(s.Stats().Billed) != 0 {
		t.Errorf("a failed batch billed %v", s.Stats().Billed)
	}
}

// TestBatchTokenLimit: a batch over the model's enqueued-token limit fails
// after its create with token_limit_exceeded; another model's does not.
func TestBatchTokenLimit(t *testing.T) {
	s := &openaiemu.Server{EnqueuedTokenLimit: func(model string) int {
		if model == "gpt-4.1" {
			return 5
		}
		return 0
	}}
	c := batchClient(t, s, "sk-a")
	b := createBatch(t, c, nil, chatLine("a", "gpt-4.1", "a long prompt of many words here"))
	b, _ = c.Batches.Get(context.Background(), b.ID)
	if b.Status != "failed" || b.Errors.Data[0].Code != "token_limit_exceeded" || !strings.Contains(b.Errors.Data[0].Message, "gpt-4.1") {
		t.Fatalf("%s %+v", b.Status, b.Errors)
	}
	b = createBatch(t, c, nil, chatLine("a", "o3", "a long prompt of many words here"))
	if b, _ = c.Batches.Get(context.Background(), b.ID); b.Status != "in_progress" {
		t.Fatalf("another model: %s", b.Status)
	}
}

// TestBatchCancelAndExpiry: a cancelled batch ends cancelled with the
// lines it had reached answered and the rest batch_cancelled; one slower
// than 24 h expires with batch_expired lines.
func TestBatchCancelAndExpiry(t *testing.T) {
	clk := providertest.NewManualClock(time.Unix(1_800_000_000, 0))
	s := &openaiemu.Server{Clock: clk, BatchTurnaround: 4 * time.Minute}
	c := batchClient(t, s, "sk-a")
	ctx := context.Background()
	b := createBatch(t, c, nil, chatLine("a", "m", "1"), chatLine("b", "m", "2"), chatLine("c", "m", "3"), chatLine("d", "m", "4"))
	clk.Advance(2 * time.Minute)
	if _, err := c.Batches.Cancel(ctx, b.ID); err != nil {
		t.Fatal(err)
	}
	b, _ = c.Batches.Get(ctx, b.ID)
	if b.Status != "cancelled" || b.RequestCounts.Completed != 2 || b.RequestCounts.Failed != 2 {
		t.Fatalf("cancelled: %s %+v", b.Status, b.RequestCounts)
	}
	errs := outputLines(t, c, b.ErrorFileID)
	if len(errs) != 2 || errs["d"]["error"].(map[string]any)["code"] != "batch_cancelled" {
		t.Fatalf("error lines %v", errs)
	}
	s.BatchTurnaround = 48 * time.Hour
	b = createBatch(t, c, nil, chatLine("a", "m", "5"), chatLine("b", "m", "6"))
	clk.Advance(24 * time.Hour)
	b, _ = c.Batches.Get(ctx, b.ID)
	if b.Status != "expired" || b.RequestCounts.Failed == 0 || b.RequestCounts.Completed+b.RequestCounts.Failed != 2 {
		t.Fatalf("expired: %s %+v", b.Status, b.RequestCounts)
	}
	expired := 0
	for _, l := range outputLines(t, c, b.ErrorFileID) {
		if e, ok := l["error"].(map[string]any); ok && e["code"] == "batch_expired" {
			expired++
		}
	}
	if expired != int(b.RequestCounts.Failed) {
		t.Fatalf("%d batch_expired lines of %d failed", expired, b.RequestCounts.Failed)
	}
}

// TestBatchListPaging: newest first, after and limit.
func TestBatchListPaging(t *testing.T) {
	clk := providertest.NewManualClock(time.Unix(1_800_000_000, 0))
	s := &openaiemu.Server{Clock: clk}
	c := batchClient(t, s, "sk-a")
	var ids []string
	for i := range 5 {
		clk.Advance(time.Second)
		ids = append(ids, createBatch(t, c, nil, chatLine("a", "m", string(rune('a'+i)))).ID)
	}
	ctx := context.Background()
	p, err := c.Batches.List(ctx, openai.BatchListParams{Limit: openai.Int(2)})
	if err != nil || len(p.Data) != 2 || p.Data[0].ID != ids[4] || !p.HasMore {
		t.Fatalf("first page %v %v", p, err)
	}
	var all []string
	for it := c.Batches.ListAutoPaging(ctx, openai.BatchListParams{Limit: openai.Int(2)}); it.Next(); {
		all = append(all, it.Current().ID)
	}
	if len(all) != 5 || all[4] != ids[0] {
		t.Fatalf("auto paging %v", all)
	}
}
