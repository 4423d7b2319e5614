package proxy_test

// The money of streams on the Anthropic and Gemini faces that end
// otherwise than whole: each test states the rule it checks.

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/geminiemu"
	"github.com/llmfleet/llmfleet/proxy"
)

// geminiChunk is one streamGenerateContent?alt=sse event as the API
// writes it; usage "" leaves usageMetadata out.
func geminiChunk(text, usage string) string {
	u := ""
	if usage != "" {
		u = `,"usageMetadata": ` + usage
	}
	return `data: {"candidates": [{"content": {"parts": [{"text": "` + text + `"}],"role": "model"},"index": 0}]` + u +
		`,"modelVersion": "gemini-2.5-flash","responseId": "r1"}` + "\r\n\r\n"
}

// geminiStreamError is the event that ends a Gemini stream in failure
// after its 200 (what geminiwire.ReadStream reads as the stream's error).
const geminiStreamError = `data: {"error": {"code": 503, "message": "The model is overloaded. Please try again later.", "status": "UNAVAILABLE"}}` + "\r\n\r\n"

// TestGeminiStreamFailedAfterItsAnswerBegan: a Gemini stream that
// the upstream ends with an error event after its 200 (it generated, and
// bills, what it streamed) is ledgered as the failure it is, with the
// usage it carried, else an estimate, as the OpenAI face does
// (TestOpenAIStreamFailedAfterItsAnswerBegan). (The tap did not look
// for the error: outcome "ok", and with no usage read yet, no usage and
// no estimate.)
func TestGeminiStreamFailedAfterItsAnswerBegan(t *testing.T) {
	body := `{"contents":[{"role":"user","parts":[{"text":"Write a long story."}]}]}`
	for _, c := range []struct{ name, stream string }{
		{"usage in the chunks", geminiChunk("Once upon", `{"promptTokenCount": 40,"candidatesTokenCount": 2,"totalTokenCount": 42}`) + geminiStreamError},
		{"no usage yet", geminiChunk("Once upon", "") + geminiStreamError},
	} {
		t.Run(c.name, func(t *testing.T) {
			u := streamReplay(t, c.stream)
			l, resp, _ := postLedgered(t, &proxy.Server{GeminiUpstream: u},
				"/gemini/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", body, "llmfleet-route", "sync")
			e := oneEntry(t, l.entries)
			if resp.StatusCode != 200 || e.Outcome == "ok" || e.Usage == (llmfleet.Usage{}) {
				t.Fatalf("stream ended in UNAVAILABLE after its 200; entry: outcome %q usage %+v estimated %v budget met %v",
					e.Outcome, e.Usage, e.Estimated, e.BudgetMet)
			}
		})
	}
}

// TestGeminiStreamWithoutSSEUsageRead: streamGenerateContent
// without alt=sse (the REST default: a JSON array of the chunks) is
// routed sync like any call and billed by the upstream; its usage is in
// the last chunk of the array. (The tap read the array as one
// GenerateContentResponse, failed, and ledgered the call with no usage
// and no estimate.)
func TestGeminiStreamWithoutSSEUsageRead(t *testing.T) {
	emu := &geminiemu.Server{}
	up := httptest.NewServer(emu)
	defer up.Close()
	u, _ := url.Parse(up.URL)
	l, resp, b := postLedgered(t, &proxy.Server{GeminiUpstream: u},
		"/gemini/v1beta/models/gemini-2.5-flash:streamGenerateContent",
		`{"contents":[{"role":"user","parts":[{"text":"Say hello to everyone here."}]}]}`, "llmfleet-route", "sync")
	e := oneEntry(t, l.entries)
	if resp.StatusCode != 200 || !strings.HasPrefix(b, "[") {
		t.Fatalf("%d %.200s", resp.StatusCode, b)
	}
	if e.Usage.InputTokens == 0 || e.Usage.OutputTokens == 0 {
		t.Fatalf("billed %d call(s), answered %d bytes with usageMetadata; entry: outcome %q usage %+v estimated %v",
			len(emu.Stats().Billed), len(b), e.Outcome, e.Usage, e.Estimated)
	}
}

// anthropicStreamHead is the start of a Messages stream: message_start
// (input and cache usage, 1 output token so far) and a first text block
// of many deltas.
func anthropicStreamHead(deltas int) string {
	var b strings.Builder
	b.WriteString("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-sonnet-4-6\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":40,\"cache_creation_input_tokens\":0,\"cache_read_input_tokens\":0,\"output_tokens\":1,\"service_tier\":\"standard\"}}}\n\n")
	b.WriteString("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
	for range deltas {
		b.WriteString("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\" and then the story went on for a while\"}}\n\n")
	}
	return b.String()
}

// TestAnthropicStreamCutOutputEstimated: an Anthropic stream broken
// off (or ended by an error event) after 2,000 text deltas had been
// generated, streamed and so billed: its entry must not say, unflagged,
// that the call produced 1 output token (message_start's count). Either
// its output is estimated (LedgerEntry.Estimated) or counted. (The usage
// read so far was taken as known: 40 in, 1 out, Estimated false.)
func TestAnthropicStreamCutOutputEstimated(t *testing.T) {
	head := anthropicStreamHead(2000)
	body := `{"model":"claude-sonnet-4-6","max_tokens":32000,"stream":true,"messages":[{"role":"user","content":"Write a long story."}]}`
	for _, c := range []struct {
		name string
		up   *url.URL
	}{
		{"broken off", brokenUpstream(t, "text/event-stream", head)},
		{"error event", streamReplay(t, head+"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n")},
		{"caller left", stalledAfter(t, head)},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := &proxy.Server{Upstream: c.up}
			l := newLedgerTap(srv)
			ps := httptest.NewServer(srv.Handler())
			defer ps.Close()
			req, _ := http.NewRequest("POST", ps.URL+"/v1/messages", strings.NewReader(body))
			req.Header.Set("X-Api-Key", "sk-x")
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("llmfleet-route", "sync")
			if c.name == "caller left" {
				ctx, cancel := context.WithCancel(req.Context())
				resp, err := http.DefaultClient.Do(req.WithContext(ctx))
				if err != nil {
					t.Fatal(err)
				}
				io.ReadFull(resp.Body, make([]byte, len(head))) // all 2000 deltas reached the caller
				cancel()
				resp.Body.Close()
			} else if resp, err := http.DefaultClient.Do(req); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			e := oneEntry(t, l.entries)
			if !e.Estimated && e.Usage.OutputTokens <= 1 {
				t.Fatalf("2000 deltas streamed, then %s; entry: outcome %q usage %+v estimated %v", c.name, e.Outcome, e.Usage, e.Estimated)
			}
		})
	}
}

// stalledAfter is an upstream that answers with first and then waits
// (generating) until its caller goes.
func stalledAfter(t *testing.T, first string) *url.URL {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, first)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	t.Cleanup(up.Close)
	u, _ := url.Parse(up.URL)
	return u
}
