package openaiwire

import (
	"testing"

	"github.com/llmfleet/llmfleet"
)

// TestReadStreamEvent: a chat chunk's usage is at its top level, a
// responses event's under "response"; usage null, [DONE] and text that is
// no JSON give nothing.
func TestReadStreamEvent(t *testing.T) {
	for data, want := range map[string]Answer{
		`{"id":"chatcmpl-1","object":"chat.completion.chunk","model":"gpt-4.1-2025-04-14","service_tier":"default","choices":[],` +
			`"usage":{"prompt_tokens":20,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":16}},"obfuscation":""}`: {
			ID: "chatcmpl-1", Model: "gpt-4.1-2025-04-14", Tier: llmfleet.TierStandard, Usage: llmfleet.Usage{InputTokens: 4, CacheReadInputTokens: 16, OutputTokens: 5}},
		`{"id":"chatcmpl-1","model":"gpt-4.1","choices":[{"index":0,"delta":{"content":"Hi"}}],"usage":null}`: {ID: "chatcmpl-1", Model: "gpt-4.1"},
		`{"type":"response.completed","sequence_number":9,"response":{"id":"resp_1","model":"o3-2025-04-16","output":[{"type":"message","content":[{"type":"output_text","text":"usage model"}]}],` +
			`"service_tier":"flex","usage":{"input_tokens":100,"input_tokens_details":{"cached_tokens":64},"output_tokens":40,"output_tokens_details":{"reasoning_tokens":32}}}}`: {
			ID: "resp_1", Model: "o3-2025-04-16", Tier: llmfleet.TierFlex, Usage: llmfleet.Usage{InputTokens: 36, CacheReadInputTokens: 64, OutputTokens: 40}},
		`{"type":"response.completed","response":{"id":"resp_2","model":"o3","status":"completed","background":true,"usage":{"input_tokens":3,"output_tokens":1}}}`: {
			ID: "resp_2", Model: "o3", Status: "completed", Background: true, Usage: llmfleet.Usage{InputTokens: 3, OutputTokens: 1}},
		`{"type":"response.output_text.delta","delta":"{\"usage\":1}","item_id":"msg_1"}`: {},
		`[DONE]`:   {},
		`{"type":`: {},
	} {
		if got, _ := ReadStreamEvent([]byte(data)); got != want {
			t.Errorf("%.60s: %+v, want %+v", data, got, want)
		}
	}
}

// TestStreamFailure: the events that end a stream in failure after its
// 200, and none of the others.
func TestStreamFailure(t *testing.T) {
	for data, want := range map[string]string{
		`{"type":"response.failed","sequence_number":5,"response":{"id":"resp_1","status":"failed","error":{"code":"server_error","message":"The model failed."},"usage":null}}`: "server_error",
		`{"type":"response.failed","response":{"status":"failed","error":null}}`:                                                                                                 "server_error",
		`{"type":"error","code":"rate_limit_exceeded","message":"Slow down.","param":null,"sequence_number":2}`:                                                                  "rate_limit_exceeded",
		`{"error":{"message":"The server had an error.","type":"server_error","param":null,"code":null}}`:                                                                        "server_error",
		`{"type":"response.completed","response":{"status":"completed","error":null,"usage":{"input_tokens":1}}}`:                                                                "",
		`{"id":"chatcmpl-1","choices":[],"usage":{"prompt_tokens":1},"error":null}`:                                                                                              "",
		`[DONE]`: "",
	} {
		if got := StreamFailure([]byte(data)); got != want {
			t.Errorf("%.60s: %q, want %q", data, got, want)
		}
	}
}
