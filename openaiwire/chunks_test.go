package openaiwire_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/llmfleet/llmfleet/openaiwire"
)

// completionWithTools is a chat completion as the API (or a batch output
// line) gives it, pretty-printed, with a tool call.
const completionWithTools = `{
  "id": "chatcmpl-1", "object": "chat.completion", "created": 1700000000, "model": "gpt-5-mini",
  "system_fingerprint": "fp_1", "service_tier": "flex",
  "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello\nthere \"you\"", "refusal": null,
     "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
     "logprobs": null, "finish_reason": "tool_calls"}],
  "usage": {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17, "prompt_tokens_details": {"cached_tokens": 2}}
}`

// TestChunksThroughTheSDK: the stream synthesised from a completion is read
// by openai-go's streaming client and accumulated back into the same
// message: content, tool call, finish reason, usage, tier.
func TestChunksThroughTheSDK(t *testing.T) {
	for _, includeUsage := range []bool{false, true} {
		stream, err := openaiwire.AppendChunks(nil, []byte(completionWithTools), includeUsage)
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.Write(stream)
		}))
		c := openai.NewClient(option.WithBaseURL(srv.URL+"/v1/"), option.WithAPIKey("k"), option.WithMaxRetries(0))
		s := c.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
			Model:    "gpt-5-mini",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
		})
		var acc openai.ChatCompletionAccumulator
		chunks := 0
		for s.Next() {
			acc.AddChunk(s.Current())
			chunks++
		}
		if err := s.Err(); err != nil {
			t.Fatalf("include_usage %v: stream: %v\n%s", includeUsage, err, stream)
		}
		srv.Close()
		if len(acc.Choices) != 1 {
			t.Fatalf("%d choices", len(acc.Choices))
		}
		m := acc.Choices[0].Message
		if m.Content != "Hello\nthere \"you\"" || acc.Choices[0].FinishReason != "tool_calls" {
			t.Errorf("content %q, finish %q", m.Content, acc.Choices[0].FinishReason)
		}
		if len(m.ToolCalls) != 1 || m.ToolCalls[0].ID != "call_1" || m.ToolCalls[0].Function.Name != "get_weather" ||
			m.ToolCalls[0].Function.Arguments != `{"city": "Paris"}` {
			t.Errorf("tool calls %+v", m.ToolCalls)
		}
		if acc.ID != "chatcmpl-1" || acc.Model != "gpt-5-mini" || string(acc.ServiceTier) != "flex" {
			t.Errorf("id %q model %q tier %q", acc.ID, acc.Model, acc.ServiceTier)
		}
		if includeUsage && (acc.Usage.PromptTokens != 12 || acc.Usage.CompletionTokens != 5) {
			t.Errorf("usage %+v", acc.Usage)
		}
		if strings.Count(string(stream), "\n\n") != chunks+1 { // + [DONE]
			t.Errorf("%d events for %d chunks read", strings.Count(string(stream), "\n\n"), chunks)
		}
	}
}
