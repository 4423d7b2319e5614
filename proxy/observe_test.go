package proxy_test

import (
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/emulator"
	"github.com/llmfleet/llmfleet/proxy"
)

// observed collects what a proxy's Observe and UpstreamError report.
type observed struct {
	mu      sync.Mutex
	entries []llmfleet.LedgerEntry
	errors  []string
	added   chan struct{}
}

func (o *observed) observe(e llmfleet.LedgerEntry) {
	o.mu.Lock()
	o.entries = append(o.entries, e)
	o.mu.Unlock()
	select {
	case o.added <- struct{}{}:
	default:
	}
}

// wait waits for an entry: the proxy reports a call when the upstream body
// ends, which may be a moment after the caller has read the last byte.
func (o *observed) wait(t *testing.T) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		o.mu.Lock()
		n := len(o.entries)
		o.mu.Unlock()
		if n > 0 {
			return
		}
		select {
		case <-o.added:
		case <-timeout:
			t.Fatal("no entry reported")
		}
	}
}

func (o *observed) upstreamError(kind string) {
	o.mu.Lock()
	o.errors = append(o.errors, kind)
	o.mu.Unlock()
}

// take returns and forgets what was reported.
func (o *observed) take() ([]llmfleet.LedgerEntry, []string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	e, k := o.entries, o.errors
	o.entries, o.errors = nil, nil
	return e, k
}

func observedProxy(t *testing.T, upstream string) (*observed, string) {
	t.Helper()
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	o := &observed{added: make(chan struct{}, 1)}
	srv := &proxy.Server{Upstream: u, Observe: o.observe, UpstreamError: o.upstreamError}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return o, ts.URL
}

// usageOf converts the SDK's usage.
func usageOf(u anthropic.Usage) llmfleet.Usage {
	var out llmfleet.Usage
	out.InputTokens, out.OutputTokens = u.InputTokens, u.OutputTokens
	out.CacheCreationInputTokens, out.CacheReadInputTokens = u.CacheCreationInputTokens, u.CacheReadInputTokens
	out.CacheCreation.Ephemeral5mInputTokens = u.CacheCreation.Ephemeral5mInputTokens
	out.CacheCreation.Ephemeral1hInputTokens = u.CacheCreation.Ephemeral1hInputTokens
	return out
}

// cachedParams is a prompt with a 1-hour and a 5-minute cache breakpoint.
func cachedParams(model, question string) anthropic.MessageNewParams {
	return anthropic.MessageNewParams{
		Model: anthropic.Model(model), MaxTokens: 64,
		System: []anthropic.TextBlockParam{
			{Text: strings.Repeat("long-lived instructions ", 200),
				CacheControl: anthropic.CacheControlEphemeralParam{TTL: anthropic.CacheControlEphemeralTTLTTL1h}},
			{Text: strings.Repeat("today's context ", 100),
				CacheControl: anthropic.CacheControlEphemeralParam{TTL: anthropic.CacheControlEphemeralTTLTTL5m}},
		},
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(question))},
	}
}

// one returns the single entry reported, after checking its common fields.
func one(t *testing.T, o *observed, outcome string, kinds ...string) llmfleet.LedgerEntry {
	t.Helper()
	o.wait(t)
	entries, errs := o.take()
	if len(entries) != 1 {
		t.Fatalf("%d entries, want 1: %+v", len(entries), entries)
	}
	e := entries[0]
	if e.Route != llmfleet.RouteSync || e.Outcome != outcome || e.Latency <= 0 || e.Time.IsZero() {
		t.Fatalf("entry %+v, want outcome %s", e, outcome)
	}
	if strings.Join(errs, ",") != strings.Join(kinds, ",") {
		t.Fatalf("upstream errors %v, want %v", errs, kinds)
	}
	return e
}

func TestObserveSyncRoute(t *testing.T) {
	emu := httptest.NewServer(&emulator.Server{})
	defer emu.Close()
	o, base := observedProxy(t, emu.URL)
	client := anthropic.NewClient(option.WithBaseURL(base), option.WithAPIKey("sk-observe"), option.WithMaxRetries(0))
	ctx := context.Background()

	// A plain call writes both cache entries.
	msg, err := client.Messages.New(ctx, cachedParams("claude-sonnet-4-6", "first"))
	if err != nil {
		t.Fatal(err)
	}
	e := one(t, o, "ok")
	if want := usageOf(msg.Usage); e.Usage != want || e.Model != "claude-sonnet-4-6" || !e.BudgetMet {
		t.Fatalf("entry %+v, want usage %+v", e, want)
	}
	if e.Usage.CacheCreation.Ephemeral1hInputTokens == 0 || e.Usage.CacheCreation.Ephemeral5mInputTokens == 0 {
		t.Fatalf("no cache writes: %+v", e.Usage)
	}

	// A stream reads them; its usage is message_start's updated by
	// message_delta's, as the SDK accumulates it.
	stream := client.Messages.NewStreaming(ctx, cachedParams("claude-sonnet-4-6", "second, streamed"))
	var acc anthropic.Message
	for stream.Next() {
		if err := acc.Accumulate(stream.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	stream.Close()
	e = one(t, o, "ok")
	if want := usageOf(acc.Usage); e.Usage != want || e.Usage.CacheReadInputTokens == 0 || e.Usage.OutputTokens < 2 {
		t.Fatalf("stream entry usage %+v, want %+v", e.Usage, want)
	}

	// An error answer: no usage, its type as the outcome, one upstream error.
	_, err = client.Messages.New(ctx, cachedParams("claude-sonnet-4-6", "[error:overloaded_error]"))
	if err == nil {
		t.Fatal("no error")
	}
	if e = one(t, o, "overloaded_error", "overloaded_error"); e.Usage != (llmfleet.Usage{}) || e.BudgetMet {
		t.Fatalf("error entry %+v", e)
	}

	// A hard deadline the upstream does not answer within is missed: the
	// caller gets 504 timeout_error, which is no upstream error, and the
	// call, which the upstream may bill, has its usage estimated. The
	// budget leaves time to send the call however loaded the machine is
	// (one spent before the call went out is not billed: not estimated).
	_, err = client.Messages.New(ctx, cachedParams("claude-haiku-4-5", "[slow:10m] hurry"),
		option.WithHeader("llmfleet-latency-budget-ms", "1500"), option.WithHeader("llmfleet-deadline", "hard"))
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusGatewayTimeout {
		t.Fatalf("err %v, want a 504", err)
	}
	if e = one(t, o, "timeout_error"); e.Budget != 1500*time.Millisecond || e.BudgetMet || !e.Estimated ||
		e.Usage.InputTokens < 500 || e.Usage.OutputTokens != 0 || e.Model != "claude-haiku-4-5" {
		t.Fatalf("budget entry %+v", e)
	}
}

func TestObserveCompressedCaller(t *testing.T) {
	emu := httptest.NewServer(&emulator.Server{})
	defer emu.Close()
	o, base := observedProxy(t, emu.URL)
	body := `{"model":"claude-sonnet-4-6","max_tokens":20,"messages":[{"role":"user","content":"zip"}]}`
	req, _ := http.NewRequest("POST", base+"/v1/messages", strings.NewReader(body))
	req.Header.Set("x-api-key", "sk-observe")
	req.Header.Set("anthropic-version", "2023-06-01")
	req.Header.Set("content-type", "application/json")
	req.Header.Set("Accept-Encoding", "gzip") // set by hand: the client sees what the proxy sends
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r io.Reader = resp.Body
	if resp.Header.Get("Content-Encoding") == "gzip" {
		if r, err = gzip.NewReader(resp.Body); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := io.ReadAll(r)
	if resp.StatusCode != 200 || !strings.Contains(string(got), `"Answer to: zip"`) {
		t.Fatalf("%d %s", resp.StatusCode, got)
	}
	if e := one(t, o, "ok"); e.Usage.InputTokens == 0 || e.Usage.OutputTokens == 0 {
		t.Fatalf("usage not read: %+v", e)
	}
}

func TestObserveUnreachableUpstream(t *testing.T) {
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()
	o, base := observedProxy(t, deadURL)
	client := anthropic.NewClient(option.WithBaseURL(base), option.WithAPIKey("sk-observe"), option.WithMaxRetries(0))
	if _, err := client.Messages.New(context.Background(), cachedParams("claude-sonnet-4-6", "anyone?")); err == nil {
		t.Fatal("no error")
	}
	one(t, o, "api_error", "network")
}

// A stream that breaks off midway counts as a network failure, one with an
// error event as that error; pass-through paths are not observed.
func TestObserveBrokenStreams(t *testing.T) {
	start := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-sonnet-4-6\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":40,\"cache_creation_input_tokens\":0,\"cache_read_input_tokens\":0,\"output_tokens\":1}}}\n\n"
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/messages" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(500)
			io.WriteString(w, `{"type":"error","error":{"type":"api_error","message":"boom"}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, start)
		w.(http.Flusher).Flush()
		if strings.Contains(r.Header.Get("X-Test"), "event") {
			io.WriteString(w, "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n")
			return
		}
		panic(http.ErrAbortHandler) // cut the connection
	}))
	defer up.Close()
	o, base := observedProxy(t, up.URL)
	post := func(hdr string) {
		req, _ := http.NewRequest("POST", base+"/v1/messages", strings.NewReader(`{"stream":true}`))
		req.Header.Set("X-Test", hdr)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	post("event")
	if e := one(t, o, "overloaded_error", "overloaded_error"); e.Usage.InputTokens != 40 || e.Model != "claude-sonnet-4-6" {
		t.Fatalf("entry %+v", e)
	}
	post("cut")
	one(t, o, "api_error", "network")

	resp, err := http.Get(base + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if entries, errs := o.take(); len(entries) != 0 || len(errs) != 0 {
		t.Fatalf("pass-through observed: %+v %v", entries, errs)
	}
}

// BenchmarkSyncPathObserved is the proxy's sync route with and without
// its ledger hooks, which read the usage off every response.
func BenchmarkSyncPathObserved(b *testing.B) {
	text := strings.Repeat("lorem ipsum ", 2000) // a 24 KB answer
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"`+text+
			`"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}`)
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	plain := httptest.NewServer((&proxy.Server{Upstream: u}).Handler())
	defer plain.Close()
	var n atomic.Int64
	observed := httptest.NewServer((&proxy.Server{Upstream: u,
		Observe: func(llmfleet.LedgerEntry) { n.Add(1) }, UpstreamError: func(string) {}}).Handler())
	defer observed.Close()
	b.Run("unobserved", func(b *testing.B) { benchmarkPost(b, plain.URL+"/v1/messages") })
	b.Run("observed", func(b *testing.B) { benchmarkPost(b, observed.URL+"/v1/messages") })
}
