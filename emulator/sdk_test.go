package emulator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
)

// The official Go SDK must be able to use the emulator as it uses the API.

func sdkClient(e *env) anthropic.Client {
	return anthropic.NewClient(option.WithBaseURL(e.ts.URL), option.WithAPIKey("key-a"),
		option.WithMaxRetries(0), option.WithHTTPClient(e.ts.Client()))
}

func TestSDKMessages(t *testing.T) {
	e := newEnv(t)
	c := sdkClient(e)
	ctx := context.Background()
	params := anthropic.MessageNewParams{
		Model:     "claude-sonnet-4-6",
		MaxTokens: 2048,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("weather? [tool]"))},
		Tools: []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{Name: "get_weather",
			InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"query": map[string]any{"type": "string"}}}}}},
		Thinking: anthropic.ThinkingConfigParamOfEnabled(1024),
	}
	msg, err := c.Messages.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if msg.StopReason != anthropic.StopReasonToolUse || len(msg.Content) != 3 || msg.Content[1].Text != "Answer to: weather? [tool]" {
		t.Fatalf("message %s", msg.RawJSON())
	}
	stream := c.Messages.NewStreaming(ctx, params)
	var acc anthropic.Message
	for stream.Next() {
		if err := acc.Accumulate(stream.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if acc.ID != msg.ID || acc.StopReason != msg.StopReason || acc.Usage.OutputTokens != msg.Usage.OutputTokens ||
		acc.Usage.InputTokens != msg.Usage.InputTokens || len(acc.Content) != len(msg.Content) {
		t.Fatalf("accumulated %s\nwant %s", acc.RawJSON(), msg.RawJSON())
	}
	for i := range msg.Content {
		a, b := acc.Content[i], msg.Content[i]
		if a.Type != b.Type || a.Text != b.Text || a.Thinking != b.Thinking || a.Signature != b.Signature ||
			a.ID != b.ID || a.Name != b.Name || string(a.Input) != string(b.Input) {
			t.Fatalf("block %d: %+v vs %+v", i, a, b)
		}
	}

	_, err = c.Messages.New(ctx, anthropic.MessageNewParams{Model: "claude-sonnet-4-6", MaxTokens: 10,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("[error:overloaded_error]"))}})
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 529 || apiErr.RequestID == "" {
		t.Fatalf("error %v", err)
	}
}

func TestSDKBatches(t *testing.T) {
	e := newEnv(t)
	c := sdkClient(e)
	ctx := context.Background()
	var reqs []anthropic.MessageBatchNewParamsRequest
	for i := range 5 {
		reqs = append(reqs, anthropic.MessageBatchNewParamsRequest{
			CustomID: fmt.Sprintf("c%d", i),
			Params: anthropic.MessageBatchNewParamsRequestParams{Model: "claude-haiku-4-5", MaxTokens: 100,
				Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(fmt.Sprint("n", i)))}},
		})
	}
	b, err := c.Messages.Batches.New(ctx, anthropic.MessageBatchNewParams{Requests: reqs})
	if err != nil {
		t.Fatal(err)
	}
	if b.ProcessingStatus != anthropic.MessageBatchProcessingStatusInProgress || b.RequestCounts.Processing != 5 ||
		b.ExpiresAt.Sub(b.CreatedAt) != 24*time.Hour || !b.EndedAt.IsZero() {
		t.Fatalf("created %s", b.RawJSON())
	}
	e.clock.Advance(time.Minute)
	g, err := c.Messages.Batches.Get(ctx, b.ID, anthropic.MessageBatchGetParams{})
	if err != nil || g.ProcessingStatus != anthropic.MessageBatchProcessingStatusEnded || g.RequestCounts.Succeeded != 5 || g.ResultsURL == "" {
		t.Fatalf("get %v %s", err, g.RawJSON())
	}
	rs := c.Messages.Batches.ResultsStreaming(ctx, b.ID, anthropic.MessageBatchResultsParams{})
	n := 0
	for rs.Next() {
		r := rs.Current()
		if r.Result.Type != "succeeded" || r.Result.Message.Content[0].Text != "Answer to: n"+r.CustomID[1:] ||
			r.Result.Message.Usage.ServiceTier != "batch" {
			t.Fatalf("result %+v", r)
		}
		n++
	}
	if rs.Err() != nil || n != 5 {
		t.Fatalf("results: %v, %d", rs.Err(), n)
	}
	// The beta client adds ?beta=true and a beta header.
	bb, err := c.Beta.Messages.Batches.Get(ctx, b.ID, anthropic.BetaMessageBatchGetParams{})
	if err != nil || bb.ID != b.ID {
		t.Fatalf("beta get %v", err)
	}
	pager := c.Messages.Batches.ListAutoPaging(ctx, anthropic.MessageBatchListParams{Limit: anthropic.Int(1)})
	count := 0
	for pager.Next() {
		count++
	}
	if pager.Err() != nil || count != 1 {
		t.Fatalf("list %v %d", pager.Err(), count)
	}
	if d, err := c.Messages.Batches.Delete(ctx, b.ID, anthropic.MessageBatchDeleteParams{}); err != nil || d.ID != b.ID {
		t.Fatalf("delete %v", err)
	}
	raw, _ := json.Marshal(e.s.Stats().Calls)
	t.Logf("calls %s", raw)
}

// The official SDK lists and retrieves models, and sends a mid-conversation
// system message, as current clients do.
func TestSDKModelsAndSystemRole(t *testing.T) {
	e := newEnv(t)
	c := sdkClient(e)
	ctx := context.Background()
	var ids []string
	pager := c.Models.ListAutoPaging(ctx, anthropic.ModelListParams{Limit: anthropic.Int(2)})
	for pager.Next() {
		m := pager.Current()
		if m.DisplayName == "" || m.CreatedAt.IsZero() {
			t.Errorf("model %s", m.RawJSON())
		}
		ids = append(ids, m.ID)
	}
	if err := pager.Err(); err != nil {
		t.Fatal(err)
	}
	if want := len(e.s.models()); len(ids) != want || want < 5 {
		t.Fatalf("listed %d models (%v), want %d", len(ids), ids, want)
	}
	m, err := c.Models.Get(ctx, "claude-sonnet-4-6", anthropic.ModelGetParams{})
	if err != nil || m.ID != "claude-sonnet-4-6" || m.DisplayName != "Claude Sonnet 4.6" {
		t.Fatalf("get: %+v, %v", m, err)
	}
	_, err = c.Models.Get(ctx, "claude-unknown-9", anthropic.ModelGetParams{})
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 {
		t.Fatalf("unknown model: %v", err)
	}

	msg, err := c.Messages.New(ctx, anthropic.MessageNewParams{Model: "claude-sonnet-4-6", MaxTokens: 100,
		Messages: []anthropic.MessageParam{
			{Role: anthropic.MessageParamRoleSystem, Content: []anthropic.ContentBlockParamUnion{anthropic.NewTextBlock("be terse")}},
			anthropic.NewUserMessage(anthropic.NewTextBlock("ping")),
		}})
	if err != nil || msg.Content[0].Text != "Answer to: ping" {
		t.Fatalf("system-role message: %v %v", msg, err)
	}
}
