package openaiwire

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	"github.com/llmfleet/llmfleet"
)

// TestReason: the flex refusals are told from other error answers.
func TestReason(t *testing.T) {
	for _, c := range []struct {
		name   string
		status int
		body   []byte
		want   error
	}{
		{"capacity", 429, Envelope("resource_unavailable", "resource_unavailable", "", "Resource unavailable"), llmfleet.ErrFlexUnavailable},
		{"capacity by message", 429, Envelope("rate_limit_exceeded", "", "", "Resource Unavailable: try later"), llmfleet.ErrFlexUnavailable},
		{"rate limit", 429, Envelope("requests", "rate_limit_exceeded", "", "Rate limit reached"), nil},
		{"no flex for the model", 400, Envelope("invalid_request_error", "invalid_value", "service_tier", "Flex is not available for this model."), llmfleet.ErrFlexUnsupported},
		{"other 400", 400, Envelope("invalid_request_error", "", "messages", "bad"), nil},
		{"not an envelope", 429, []byte("busy"), nil},
	} {
		if got := Reason(c.status, c.body); got != c.want {
			t.Errorf("%s: Reason = %v, want %v", c.name, got, c.want)
		}
		pe := ErrorOf(c.status, c.body, "req_1")
		if !errors.Is(pe, c.want) && c.want != nil {
			t.Errorf("%s: ErrorOf does not match %v", c.name, c.want)
		}
		if pe.StatusCode != c.status || !bytes.Equal(pe.Body, c.body) || pe.Type == "" {
			t.Errorf("%s: ErrorOf = %+v", c.name, pe)
		}
	}
	var env map[string]map[string]any
	if err := json.Unmarshal(Envelope("invalid_request_error", "", "", "m"), &env); err != nil {
		t.Fatal(err)
	}
	if e := env["error"]; e["param"] != nil || e["code"] != nil || e["message"] != "m" || len(e) != 4 {
		t.Errorf("envelope %v: want all four members, param and code null", e)
	}
	if TypeOfStatus(http.StatusTooManyRequests) != "rate_limit_exceeded" || TypeOfStatus(503) != "server_error" {
		t.Error("TypeOfStatus")
	}
}

// TestReadAnswer: the usage of every routed endpoint, cached input apart,
// and the tier served.
func TestReadAnswer(t *testing.T) {
	for _, c := range []struct {
		name, body string
		want       Answer
	}{
		{"chat", `{"model":"gpt-5","service_tier":"flex","usage":{"prompt_tokens":10,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":4}}}`,
			Answer{Model: "gpt-5", Usage: llmfleet.Usage{InputTokens: 6, CacheReadInputTokens: 4, OutputTokens: 3}, Tier: llmfleet.TierFlex}},
		{"responses", `{"model":"o3","service_tier":"default","usage":{"input_tokens":8,"output_tokens":2,"input_tokens_details":{"cached_tokens":8}}}`,
			Answer{Model: "o3", Usage: llmfleet.Usage{InputTokens: 0, CacheReadInputTokens: 8, OutputTokens: 2}, Tier: llmfleet.TierStandard}},
		{"background, queued", `{"id":"resp_1","model":"o3","status":"queued","background":true,"usage":null}`,
			Answer{Model: "o3", ID: "resp_1", Status: "queued", Background: true}},
		{"embeddings", `{"object":"list","model":"text-embedding-3-small","usage":{"prompt_tokens":5,"total_tokens":5}}`,
			Answer{Model: "text-embedding-3-small", Usage: llmfleet.Usage{InputTokens: 5}}},
		{"fast", `{"model":"gpt-5","service_tier":"fast"}`, Answer{Model: "gpt-5", Tier: llmfleet.TierPriority}},
		{"batch", `{"model":"gpt-5","service_tier":"batch"}`, Answer{Model: "gpt-5", Tier: llmfleet.TierBatch}},
	} {
		got, err := ReadAnswer([]byte(c.body))
		if err != nil || got != c.want {
			t.Errorf("%s: %+v, %v; want %+v", c.name, got, err, c.want)
		}
	}
	if !Routed(ChatCompletions) || !Routed(Embeddings) || Routed("/v1/files") || Flexible(Embeddings) || !Flexible(Responses) {
		t.Error("Routed or Flexible")
	}
}

// FuzzAppendChunks: any body either is refused or gives events whose data
// lines are each one valid JSON object, ending with [DONE].
func FuzzAppendChunks(f *testing.F) {
	f.Add([]byte(`{"id":"c","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1}}`), true)
	f.Add([]byte(`{"choices":[{"message":{"tool_calls":[{"id":"a"},{"id":"b","function":{"arguments":"{}"}}]}}]}`), false)
	f.Add([]byte(`{"choices":[{"message":{"refusal":"no"}}],"system_fingerprint":{"a":[1,
2]}}`), true)
	f.Add([]byte(`{"id":"\u007f\u0000é","model":"\ud800","choices":[{"message":{"role":"\u0001"}}]}`), true)
	f.Fuzz(func(t *testing.T, body []byte, includeUsage bool) {
		out, err := AppendChunks(nil, body, includeUsage)
		if err != nil {
			return
		}
		events := bytes.Split(bytes.TrimSuffix(out, []byte("\n\n")), []byte("\n\n"))
		if string(events[len(events)-1]) != "data: [DONE]" {
			t.Fatalf("last event %q", events[len(events)-1])
		}
		for _, ev := range events[:len(events)-1] {
			data, ok := bytes.CutPrefix(ev, []byte("data: "))
			if !ok || bytes.ContainsAny(data, "\r\n") {
				t.Fatalf("event %q of %q", ev, body)
			}
			var v map[string]any
			if err := json.Unmarshal(data, &v); err != nil {
				t.Fatalf("event %q of %q: %v", data, body, err)
			}
		}
	})
}
