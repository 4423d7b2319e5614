package proxy_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/dispatch"
	"github.com/llmfleet/llmfleet/middleware/openaimw"
	oai "github.com/llmfleet/llmfleet/openai"
	"github.com/llmfleet/llmfleet/openaiemu"
	"github.com/llmfleet/llmfleet/pricing"
	"github.com/llmfleet/llmfleet/proxy"
)

// openAIFace starts the emulator, a dispatcher with the OpenAI provider
// and the proxy in front; it returns the proxy's base URL.
func openAIFace(t *testing.T, emu *openaiemu.Server, observe func(llmfleet.LedgerEntry)) string {
	t.Helper()
	d, u := openAIEngine(t, emu)
	srv := &proxy.Server{Submitter: d, OpenAIUpstream: u, Observe: observe, PingInterval: 10 * time.Millisecond}
	ps := httptest.NewServer(srv.Handler())
	t.Cleanup(ps.Close)
	return ps.URL
}

// openAIEngine starts the emulator and a dispatcher with the OpenAI
// provider in front of it (short windows and polls); it returns the
// dispatcher and the emulator's URL.
func openAIEngine(t *testing.T, emu *openaiemu.Server) (*dispatch.Dispatcher, *url.URL) {
	t.Helper()
	up := httptest.NewServer(emu)
	t.Cleanup(up.Close)
	d := &dispatch.Dispatcher{Providers: []llmfleet.Provider{&oai.Provider{BaseURL: up.URL}}, Flex: pricing.Default().Flex,
		Policy: dispatch.Policy{BatchWindow: 20 * time.Millisecond, BatchMinSize: 100, PollInterval: 20 * time.Millisecond,
			SyncLatencyPrior: time.Second, FlexLatencyPrior: time.Second, FlexRetryBackoff: time.Millisecond, NoRescue: true}}
	if err := d.Open(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close(context.Background()) })
	u, _ := url.Parse(up.URL)
	return d, u
}

func sdk(base, key string) openai.Client {
	return openai.NewClient(option.WithBaseURL(base), option.WithAPIKey(key), option.WithMaxRetries(0))
}

func ask(prompt string) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{Model: "gpt-4.1", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)}}
}

// TestOpenAIFaceRoutes: openai-go through /openai/v1: sync without a
// budget, flex on a flex model, batch when forced (chat, responses,
// embeddings), the route on every answer, each prompt billed once.
func TestOpenAIFaceRoutes(t *testing.T) {
	emu := &openaiemu.Server{BatchTurnaround: 30 * time.Millisecond}
	base := openAIFace(t, emu, nil)
	c := sdk(base+"/openai/v1", "sk-a")
	ctx := context.Background()
	var hr *http.Response
	res, err := c.Chat.Completions.New(ctx, ask("plain"), option.WithResponseInto(&hr))
	if err != nil || res.Choices[0].Message.Content != "Answer to: plain" || hr.Header.Get("Llmfleet-Route") != "sync" {
		t.Fatalf("sync: %+v %v route %q", res, err, hr.Header.Get("Llmfleet-Route"))
	}
	flexParams := ask("flexible")
	flexParams.Model = "o4-mini"
	res, err = c.Chat.Completions.New(ctx, flexParams, option.WithHeader("llmfleet-latency-budget-ms", "600000"), option.WithResponseInto(&hr))
	if err != nil || hr.Header.Get("Llmfleet-Route") != "flex" || res.ServiceTier != "flex" {
		t.Fatalf("flex: %+v %v route %q", res, err, hr.Header.Get("Llmfleet-Route"))
	}
	batch := option.WithHeader("llmfleet-route", "batch")
	res, err = c.Chat.Completions.New(ctx, ask("batched"), batch, option.WithResponseInto(&hr))
	if err != nil || res.Choices[0].Message.Content != "Answer to: batched" || hr.Header.Get("Llmfleet-Route") != "batch" || hr.Header.Get("Llmfleet-Batch-Id") == "" {
		t.Fatalf("batch: %+v %v %v", res, err, hr.Header)
	}
	r2, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: "o3", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("batched response")}}, batch)
	if err != nil || !strings.Contains(r2.OutputText(), "batched response") {
		t.Fatalf("batched response: %+v %v", r2, err)
	}
	emb, err := c.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "text-embedding-3-small",
		Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("batched embedding")}}, batch)
	if err != nil || len(emb.Data) != 1 || len(emb.Data[0].Embedding) == 0 {
		t.Fatalf("batched embedding: %+v %v", emb, err)
	}
	// The budget prefix form of the base URL.
	budgeted := sdk(base+"/budget/600000/openai/v1", "sk-a")
	res, err = budgeted.Chat.Completions.New(ctx, flexParams, option.WithResponseInto(&hr))
	if err != nil || hr.Header.Get("Llmfleet-Route") != "flex" {
		t.Fatalf("budget prefix: %v route %q", err, hr.Header.Get("Llmfleet-Route"))
	}
	for _, p := range []string{"plain", "flexible", "batched", "batched response", "batched embedding"} {
		if n := emu.Stats().Billed[p]; n != 1 && !(p == "flexible" && n == 2) {
			t.Errorf("%q billed %d times", p, n)
		}
	}
	// Pass-through: models, files.
	if _, err := c.Files.List(ctx, openai.FileListParams{}); err != nil {
		t.Errorf("files pass through: %v", err)
	}
}

// TestOpenAIFaceStreamFromBatch: a streaming chat caller whose call is
// batched gets chunks the SDK accumulates into the answer, usage included.
func TestOpenAIFaceStreamFromBatch(t *testing.T) {
	emu := &openaiemu.Server{BatchTurnaround: 50 * time.Millisecond}
	c := sdk(openAIFace(t, emu, nil)+"/openai/v1", "sk-a")
	p := ask("stream me")
	p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	s := c.Chat.Completions.NewStreaming(context.Background(), p, option.WithHeader("llmfleet-route", "batch"))
	var acc openai.ChatCompletionAccumulator
	for s.Next() {
		acc.AddChunk(s.Current())
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if len(acc.Choices) != 1 || acc.Choices[0].Message.Content != "Answer to: stream me" || acc.Usage.CompletionTokens == 0 {
		t.Fatalf("accumulated %+v", acc.ChatCompletion)
	}
}

// TestOpenAIFaceErrors: errors in the OpenAI envelope, as the SDK reads
// them, on the sync and the batch route; no key; a bad route header.
func TestOpenAIFaceErrors(t *testing.T) {
	emu := &openaiemu.Server{BatchTurnaround: 30 * time.Millisecond,
		Fault: func(path string) (int, string) {
			return 0, ""
		}}
	base := openAIFace(t, emu, nil)
	c := sdk(base+"/openai/v1", "sk-a")
	ctx := context.Background()
	bad := openai.ChatCompletionNewParams{Model: "gpt-4.1"} // no messages
	for _, opts := range [][]option.RequestOption{nil, {option.WithHeader("llmfleet-route", "batch")}} {
		_, err := c.Chat.Completions.New(ctx, bad, opts...)
		var ae *openai.Error
		if !errors.As(err, &ae) || ae.StatusCode != 400 || ae.Message == "" {
			t.Errorf("%v: %v, want a 400 in the envelope", opts, err)
		}
	}
	_, err := c.Chat.Completions.New(ctx, ask("x"), option.WithHeader("llmfleet-route", "teleport"))
	var ae *openai.Error
	if !errors.As(err, &ae) || ae.StatusCode != 400 || ae.Param != "llmfleet-route" {
		t.Errorf("bad route: %v", err)
	}
}

// TestOpenAIFaceKeysNotMixed: two keys batched in one window each get
// their own answer, from batches of their own.
func TestOpenAIFaceKeysNotMixed(t *testing.T) {
	emu := &openaiemu.Server{BatchTurnaround: 30 * time.Millisecond}
	base := openAIFace(t, emu, nil)
	var wg sync.WaitGroup
	batches := map[string]map[string]bool{}
	var mu sync.Mutex
	for _, key := range []string{"sk-alice", "sk-bob"} {
		for i := range 3 {
			wg.Go(func() {
				prompt := key + " " + string(rune('a'+i))
				var hr *http.Response
				client := sdk(base+"/openai/v1", key)
				res, err := client.Chat.Completions.New(context.Background(), ask(prompt),
					option.WithHeader("llmfleet-route", "batch"), option.WithResponseInto(&hr))
				if err != nil || res.Choices[0].Message.Content != "Answer to: "+prompt {
					t.Errorf("%s: %+v %v", prompt, res, err)
					return
				}
				mu.Lock()
				if batches[key] == nil {
					batches[key] = map[string]bool{}
				}
				batches[key][hr.Header.Get("Llmfleet-Batch-Id")] = true
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	for id := range batches["sk-alice"] {
		if batches["sk-bob"][id] {
			t.Errorf("batch %s holds both keys' requests", id)
		}
	}
}

// TestOpenAIFaceFlexFallback: flex refused for capacity is retried by the
// engine's flex executor, then sent standard while the budget leaves the
// engine's reserve (the sync latency prior, 1s, and RescueMargin, 2s);
// the ledger entry is route flex, tier standard.
func TestOpenAIFaceFlexFallback(t *testing.T) {
	var refused atomic.Int32
	emu := &openaiemu.Server{FlexUnavailable: func(string) bool { refused.Add(1); return true }}
	var mu sync.Mutex
	var entries []llmfleet.LedgerEntry
	base := openAIFace(t, emu, func(e llmfleet.LedgerEntry) { mu.Lock(); entries = append(entries, e); mu.Unlock() })
	c := sdk(base+"/openai/v1", "sk-a")
	p := ask("fallback")
	p.Model = "o4-mini"
	var hr *http.Response
	res, err := c.Chat.Completions.New(context.Background(), p, option.WithHeader("llmfleet-route", "flex"),
		option.WithHeader("llmfleet-latency-budget-ms", "5000"), option.WithResponseInto(&hr))
	if err != nil || res.ServiceTier == "flex" || hr.Header.Get("Llmfleet-Route") != "flex" {
		t.Fatalf("%+v %v", res, err)
	}
	if refused.Load() < 2 || emu.Stats().Billed["fallback"] != 1 {
		t.Fatalf("%d refusals, billed %d", refused.Load(), emu.Stats().Billed["fallback"])
	}
	mu.Lock()
	defer mu.Unlock()
	if len(entries) != 1 || entries[0].Route != llmfleet.RouteFlex || entries[0].PricedTier() != llmfleet.TierStandard || entries[0].Provider != "openai" || entries[0].Usage.OutputTokens == 0 {
		t.Fatalf("entries %+v", entries)
	}
}

// TestOpenAIMiddleware: openai-go with llmfleet's middleware routes in
// process by the budget in the context: sync unchanged, flex with the
// tier, batch answered from the batch (a stream too).
func TestOpenAIMiddleware(t *testing.T) {
	emu := &openaiemu.Server{BatchTurnaround: 30 * time.Millisecond}
	up := httptest.NewServer(emu)
	defer up.Close()
	d := &dispatch.Dispatcher{Providers: []llmfleet.Provider{&oai.Provider{BaseURL: up.URL}}, Flex: pricing.Default().Flex,
		Policy: dispatch.Policy{BatchWindow: 20 * time.Millisecond, BatchMinSize: 100, PollInterval: 20 * time.Millisecond,
			SyncLatencyPrior: time.Second, FlexLatencyPrior: time.Second, TurnaroundPrior: 100 * time.Millisecond, NoRescue: true}}
	if err := d.Open(); err != nil {
		t.Fatal(err)
	}
	defer d.Close(context.Background())
	srv := &proxy.Server{Submitter: d}
	c := openai.NewClient(option.WithBaseURL(up.URL+"/v1"), option.WithAPIKey("sk-a"), option.WithMaxRetries(0),
		option.WithMiddleware(openaimw.New(srv)))
	var hr *http.Response
	res, err := c.Chat.Completions.New(context.Background(), ask("no budget"), option.WithResponseInto(&hr))
	if err != nil || hr.Header.Get("Llmfleet-Route") != "sync" || res.Choices[0].Message.Content != "Answer to: no budget" {
		t.Fatalf("sync: %v %v", err, hr.Header)
	}
	patient := llmfleet.WithBudget(context.Background(), time.Hour)
	res, err = c.Chat.Completions.New(patient, ask("patient"), option.WithResponseInto(&hr))
	if err != nil || hr.Header.Get("Llmfleet-Route") != "batch" || res.Choices[0].Message.Content != "Answer to: patient" {
		t.Fatalf("batch: %v %v", err, hr.Header)
	}
	p := ask("flexible")
	p.Model = "o4-mini"
	res, err = c.Chat.Completions.New(llmfleet.WithBudget(context.Background(), time.Minute), p, option.WithResponseInto(&hr))
	if err != nil || hr.Header.Get("Llmfleet-Route") != "flex" || res.ServiceTier != "flex" {
		t.Fatalf("flex: %v %v %+v", err, hr.Header, res)
	}
	s := c.Chat.Completions.NewStreaming(patient, ask("patient stream"))
	var acc openai.ChatCompletionAccumulator
	for s.Next() {
		acc.AddChunk(s.Current())
	}
	if s.Err() != nil || acc.Choices[0].Message.Content != "Answer to: patient stream" {
		t.Fatalf("stream: %v %+v", s.Err(), acc.ChatCompletion)
	}
	if b := emu.Stats().Billed; b["patient"] != 1 || b["flexible"] != 1 || b["patient stream"] != 1 {
		t.Fatalf("billed %v", b)
	}
}
