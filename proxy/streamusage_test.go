package proxy_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/observe"
	"github.com/llmfleet/llmfleet/pricing"
	"github.com/llmfleet/llmfleet/proxy"
)

// The streams below are shaped as the real APIs send them
// (../shared/spec/real-wire-and-caching.md §1): the usage of a
// /v1/responses stream only under "response" in response.completed (or
// .incomplete), a chat stream's in its last chunk ("choices": [], every
// other chunk "usage": null, each with "obfuscation"), an Anthropic
// stream's in message_start and message_delta (data padded with trailing
// spaces), a Gemini stream's in the usageMetadata of its chunks (events
// ended by CRLF CRLF).

// responsesStream is a streamed /v1/responses answer of o4-mini: a
// reasoning item, a message of two deltas, then terminal (the last event's
// type) with usage, or without any terminal event when terminal is "".
func responsesStream(terminal, usage string) string {
	resp := func(status, output, usage string) string {
		return `{"id":"resp_68b1f0a2c4d88190a9c1","object":"response","created_at":1756480162,"status":"` + status +
			`","background":false,"error":null,"incomplete_details":null,"instructions":null,"max_output_tokens":null,` +
			`"model":"o4-mini-2025-04-16","output":` + output + `,"parallel_tool_calls":true,"previous_response_id":null,` +
			`"reasoning":{"effort":"medium","summary":null},"service_tier":"auto","store":true,"temperature":1.0,` +
			`"text":{"format":{"type":"text"},"verbosity":"medium"},"tool_choice":"auto","tools":[],"top_p":1.0,` +
			`"truncation":"disabled","usage":` + usage + `,"user":null,"metadata":{}}`
	}
	ev := func(name, data string) string { return "event: " + name + "\ndata: " + data + "\n\n" }
	msg := `{"id":"msg_68b1f0a5e2a08190","type":"message","status":"completed","content":[{"type":"output_text","annotations":[],"logprobs":[],"text":"Hello there."}],"role":"assistant"}`
	s := ev("response.created", `{"type":"response.created","sequence_number":0,"response":`+resp("in_progress", "[]", "null")+`}`) +
		ev("response.in_progress", `{"type":"response.in_progress","sequence_number":1,"response":`+resp("in_progress", "[]", "null")+`}`) +
		ev("response.output_item.added", `{"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":{"id":"rs_68b1f0a3","type":"reasoning","summary":[]}}`) +
		ev("response.output_item.done", `{"type":"response.output_item.done","sequence_number":3,"output_index":0,"item":{"id":"rs_68b1f0a3","type":"reasoning","summary":[]}}`) +
		ev("response.output_text.delta", `{"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_68b1f0a5e2a08190","output_index":1,"content_index":0,"delta":"Hello","logprobs":[],"obfuscation":"q3XbT0tWkL"}`) +
		ev("response.output_text.delta", `{"type":"response.output_text.delta","sequence_number":5,"item_id":"msg_68b1f0a5e2a08190","output_index":1,"content_index":0,"delta":" there.","logprobs":[],"obfuscation":"Zr81Qm"}`) +
		ev("response.output_text.done", `{"type":"response.output_text.done","sequence_number":6,"item_id":"msg_68b1f0a5e2a08190","output_index":1,"content_index":0,"text":"Hello there.","logprobs":[]}`)
	if terminal == "" {
		return s
	}
	status := strings.TrimPrefix(terminal, "response.")
	full := strings.Replace(resp(status, `[{"id":"rs_68b1f0a3","type":"reasoning","summary":[]},`+msg+`]`, usage), `"service_tier":"auto"`, `"service_tier":"default"`, 1)
	return s + ev(terminal, `{"type":"`+terminal+`","sequence_number":7,"response":`+full+`}`)
}

// responsesUsage is the usage of responsesStream: 1,200 tokens in, 1,024
// of them cached, 300 out, 192 of them reasoning.
const responsesUsage = `{"input_tokens":1200,"input_tokens_details":{"cached_tokens":1024},"output_tokens":300,"output_tokens_details":{"reasoning_tokens":192},"total_tokens":1500}`

// chatStream is a streamed chat completion of gpt-4.1 under
// stream_options.include_usage.
func chatStream() string {
	chunk := func(choices, usage, obf string) string {
		return `data: {"id":"chatcmpl-C2xv1YfZ8k","object":"chat.completion.chunk","created":1756480162,"model":"gpt-4.1-2025-04-14",` +
			`"service_tier":"default","system_fingerprint":"fp_3f58d112f7","choices":` + choices + `,"usage":` + usage + `,"obfuscation":"` + obf + `"}` + "\n\n"
	}
	return chunk(`[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}]`, "null", "9Jk2") +
		chunk(`[{"index":0,"delta":{"content":"Hi"},"logprobs":null,"finish_reason":null}]`, "null", "Xh0aP") +
		chunk(`[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]`, "null", "b2") +
		chunk(`[]`, `{"prompt_tokens":2000,"completion_tokens":50,"total_tokens":2050,"prompt_tokens_details":{"cached_tokens":1920,"audio_tokens":0},`+
			`"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}`, "") +
		"data: [DONE]\n\n"
}

// anthropicStream is a streamed Message with cache writes of both TTLs
// and a cache read, thinking tokens, pings and padded data lines.
func anthropicStream() string {
	return "event: message_start\n" +
		`data: {"type":"message_start","message":{"model":"claude-sonnet-4-6-20260217","id":"msg_01XFDUDYJgAACzvnptvVoYEL","type":"message","role":"assistant","content":[],"stop_reason":null,"stop_sequence":null,"stop_details":null,` +
		`"usage":{"input_tokens":12,"cache_creation_input_tokens":1500,"cache_read_input_tokens":20000,"cache_creation":{"ephemeral_5m_input_tokens":1000,"ephemeral_1h_input_tokens":500},"output_tokens":1,"service_tier":"standard","inference_geo":"not_available"}}}` + "\n\n" +
		"event: ping\ndata: {\"type\": \"ping\"}\n\n" +
		"event: content_block_start\n" + `data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}` + "\n\n" +
		"event: content_block_delta\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}` + "\n\n" +
		"event: content_block_stop\n" + `data: {"type":"content_block_stop","index":0   }` + "\n\n" +
		"event: message_delta\n" +
		`data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null,"stop_details":null},"usage":{"input_tokens":12,"cache_creation_input_tokens":1500,"cache_read_input_tokens":20000,"output_tokens":250,"output_tokens_details":{"thinking_tokens":120}}}        ` + "\n\n" +
		"event: message_stop\n" + `data: {"type":"message_stop"           }` + "\n\n"
}

// geminiStream is a streamed generateContent of gemini-2.5-flash with a
// cached context and thoughts; each chunk carries the usage so far.
func geminiStream() string {
	chunk := func(text, finish, usage string) string {
		return `data: {"candidates": [{"content": {"parts": [{"text": "` + text + `"}],"role": "model"}` + finish + `,"index": 0}],"usageMetadata": ` + usage +
			`,"modelVersion": "gemini-2.5-flash","responseId": "pDtMaKzcIbqHz7IPq9SR8Qc"}` + "\r\n\r\n"
	}
	return chunk("Hello", "", `{"promptTokenCount": 3000,"candidatesTokenCount": 1,"totalTokenCount": 3401,"cachedContentTokenCount": 2048,"promptTokensDetails": [{"modality": "TEXT","tokenCount": 3000}],"thoughtsTokenCount": 400,"serviceTier": "standard"}`) +
		chunk(" there.", `,"finishReason": "STOP"`, `{"promptTokenCount": 3000,"candidatesTokenCount": 120,"totalTokenCount": 3520,"cachedContentTokenCount": 2048,"promptTokensDetails": [{"modality": "TEXT","tokenCount": 3000}],"cacheTokensDetails": [{"modality": "TEXT","tokenCount": 2048}],"thoughtsTokenCount": 400,"serviceTier": "standard"}`)
}

// streamReplay is an upstream that answers every POST with body as an
// event stream, written in small pieces so that events straddle reads.
func streamReplay(t *testing.T, body string) *url.URL {
	t.Helper()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Request-Id", "req_011CSHnYq2f1ZLkzXJ8dGvU9")
		rc := http.NewResponseController(w)
		for s := body; s != ""; {
			n := min(37, len(s))
			io.WriteString(w, s[:n])
			rc.Flush()
			s = s[n:]
		}
	}))
	t.Cleanup(up.Close)
	u, _ := url.Parse(up.URL)
	return u
}

// streamThrough sends a streamed call through a proxy whose three faces
// go to an upstream replaying stream; it checks the caller got stream
// byte for byte and returns the call's ledger entry, priced as serve
// prices it.
func streamThrough(t *testing.T, stream, path, body string, hdr ...string) llmfleet.LedgerEntry {
	t.Helper()
	u := streamReplay(t, stream)
	var (
		mu      sync.Mutex
		entries []llmfleet.LedgerEntry
	)
	srv := &proxy.Server{Upstream: u, OpenAIUpstream: u, GeminiUpstream: u,
		Observe: func(e llmfleet.LedgerEntry) { mu.Lock(); entries = append(entries, e); mu.Unlock() }}
	ps := httptest.NewServer(srv.Handler())
	t.Cleanup(ps.Close)
	resp := post(t, ps.URL+path, body, hdr...)
	got := readAll(t, resp.Body)
	if resp.StatusCode != 200 || got != stream {
		t.Fatalf("%s: status %d, passed on %d bytes of %d, changed: %v", path, resp.StatusCode, len(got), len(stream), got != stream)
	}
	ps.Close() // the handler has returned: its entry is in
	mu.Lock()
	defer mu.Unlock()
	if len(entries) != 1 {
		t.Fatalf("%s: %d ledger entries", path, len(entries))
	}
	prices := pricing.Default()
	p, err := observe.New(observe.Config{Price: prices.Cost, Canonical: prices.Canonical, Provider: "anthropic", SampleInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(t.Context())
	return p.Price(entries[0])
}

// checkPriced checks e's usage, and that its cost is the price table's
// for that usage, above zero (its outcome is its caller's to check).
func checkPriced(t *testing.T, e llmfleet.LedgerEntry, provider, model string, want llmfleet.Usage) {
	t.Helper()
	cost, ok := pricing.Default().Cost(provider, model, want, llmfleet.RouteSync)
	if e.Provider != provider || e.Model != model || e.Usage != want || !e.Priced || !ok || cost <= 0 || e.CostUSD != cost {
		t.Fatalf("entry %+v\nwant %s %s usage %+v cost %v (priced %v)", e, provider, model, want, cost, ok)
	}
}

func TestStreamUsageOpenAIResponses(t *testing.T) {
	want := llmfleet.Usage{InputTokens: 176, CacheReadInputTokens: 1024, OutputTokens: 300}
	for terminal, outcome := range map[string]string{"response.completed": "ok", "response.incomplete": "ok", "response.failed": "server_error"} {
		stream := strings.Replace(responsesStream(terminal, responsesUsage), `"status":"failed","background":false,"error":null`,
			`"status":"failed","background":false,"error":{"code":"server_error","message":"The model failed to generate a response."}`, 1)
		e := streamThrough(t, stream, "/openai/v1/responses",
			`{"model":"o4-mini","stream":true,"input":"Say hello."}`, "Authorization", "Bearer sk-test")
		checkPriced(t, e, "openai", "o4-mini", want)
		if e.Tier != llmfleet.TierStandard || e.Outcome != outcome {
			t.Errorf("%s: tier %q outcome %q, want %q", terminal, e.Tier, e.Outcome, outcome)
		}
	}
}

func TestStreamUsageOpenAIChatIncludeUsage(t *testing.T) {
	e := streamThrough(t, chatStream(), "/openai/v1/chat/completions",
		`{"model":"gpt-4.1","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Hi"}]}`,
		"Authorization", "Bearer sk-test")
	checkPriced(t, e, "openai", "gpt-4.1", llmfleet.Usage{InputTokens: 80, CacheReadInputTokens: 1920, OutputTokens: 50})
	if e.Outcome != "ok" {
		t.Errorf("outcome %q", e.Outcome)
	}
}

func TestStreamUsageAnthropic(t *testing.T) {
	e := streamThrough(t, anthropicStream(), "/v1/messages",
		`{"model":"claude-sonnet-4-6","max_tokens":1024,"stream":true,"messages":[{"role":"user","content":"Hi"}]}`,
		"X-Api-Key", "sk-ant-test", "Anthropic-Version", "2023-06-01")
	want := llmfleet.Usage{InputTokens: 12, OutputTokens: 250, CacheCreationInputTokens: 1500, CacheReadInputTokens: 20000}
	want.CacheCreation.Ephemeral5mInputTokens, want.CacheCreation.Ephemeral1hInputTokens = 1000, 500
	checkPriced(t, e, "anthropic", "claude-sonnet-4-6", want)
	if e.Outcome != "ok" {
		t.Errorf("outcome %q", e.Outcome)
	}
}

func TestStreamUsageGemini(t *testing.T) {
	e := streamThrough(t, geminiStream(), "/gemini/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
		`{"contents":[{"role":"user","parts":[{"text":"Hi"}]}]}`, "X-Goog-Api-Key", "AIza-test")
	checkPriced(t, e, "gemini", "gemini-2.5-flash", llmfleet.Usage{InputTokens: 952, CacheReadInputTokens: 2048, OutputTokens: 520})
	if e.Outcome != "ok" {
		t.Errorf("outcome %q", e.Outcome)
	}
	if e.Tier != llmfleet.TierStandard {
		t.Errorf("tier %q", e.Tier)
	}
}

// TestStreamUsageMissingNotPriced: a stream that ends without its usage
// (no response.completed) is ledgered unpriced, not at $0.
func TestStreamUsageMissingNotPriced(t *testing.T) {
	e := streamThrough(t, responsesStream("", ""), "/openai/v1/responses",
		`{"model":"o4-mini","stream":true,"input":"Say hello."}`, "Authorization", "Bearer sk-test")
	if e.Outcome != "ok" || e.Usage != (llmfleet.Usage{}) || e.Priced || e.CostUSD != 0 {
		t.Fatalf("entry %+v", e)
	}
}

// TestStreamUsageOpenAIResponsesLongAnswer: a response.completed holding
// a long answer whole (2 MiB, over what a JSON answer is kept for) still
// has its usage read.
func TestStreamUsageOpenAIResponsesLongAnswer(t *testing.T) {
	long := strings.Repeat("word ", 2<<20/5)
	stream := strings.Replace(responsesStream("response.completed", responsesUsage), `"text":"Hello there."}],"role"`, `"text":"`+long+`"}],"role"`, 1)
	if len(stream) < 2<<20 {
		t.Fatal("the answer is not long")
	}
	e := streamThrough(t, stream, "/openai/v1/responses", `{"model":"o4-mini","stream":true,"input":"Say a lot."}`, "Authorization", "Bearer sk-test")
	checkPriced(t, e, "openai", "o4-mini", llmfleet.Usage{InputTokens: 176, CacheReadInputTokens: 1024, OutputTokens: 300})
	if e.Outcome != "ok" {
		t.Errorf("outcome %q", e.Outcome)
	}
}
