package proxy_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/claude"
	"github.com/llmfleet/llmfleet/dispatch"
	"github.com/llmfleet/llmfleet/emulator"
	"github.com/llmfleet/llmfleet/middleware/anthropicmw"
	"github.com/llmfleet/llmfleet/proxy"
)

// stack is the whole llmfleet on loopback: proxy → dispatch.Dispatcher →
// claude.Provider → emulator.Server.
type stack struct {
	emu   *emulator.Server
	emuTS *httptest.Server
	d     *dispatch.Dispatcher
	srv   *proxy.Server
	ts    *httptest.Server
}

// newStack wires the real components with timings small enough that a
// batch ends within milliseconds.
func newStack(t *testing.T, pol dispatch.Policy) *stack {
	t.Helper()
	return startStack(t, pol, nil, nil, nil)
}

// startStack is newStack with an optional store and sealer for the
// dispatcher (closed after it) and an optional proxy to put in front.
func startStack(t *testing.T, pol dispatch.Policy, srv *proxy.Server, store llmfleet.Store, sealer llmfleet.Sealer) *stack {
	t.Helper()
	quiet := slog.New(slog.DiscardHandler)
	st := &stack{emu: &emulator.Server{
		Turnaround: func(string, *rand.Rand) time.Duration { return 0 },
		Logger:     quiet,
	}}
	st.emuTS = httptest.NewServer(st.emu)
	t.Cleanup(st.emuTS.Close)
	if pol.BatchWindow == 0 {
		pol.BatchWindow = 5 * time.Millisecond
	}
	pol.PollInterval = 2 * time.Millisecond
	pol.MaxPollInterval = 5 * time.Millisecond
	pol.TurnaroundPrior = 20 * time.Millisecond
	st.d = &dispatch.Dispatcher{
		Providers: []llmfleet.Provider{&claude.Provider{BaseURL: st.emuTS.URL, Logger: quiet}},
		Policy:    pol,
		Logger:    quiet,
		Store:     store,
		Sealer:    sealer,
	}
	if err := st.d.Open(); err != nil {
		t.Fatal(err)
	}
	if srv == nil {
		srv = &proxy.Server{}
	}
	srv.Submitter = st.d
	srv.Upstream, _ = url.Parse(st.emuTS.URL)
	srv.PingInterval = time.Millisecond
	srv.Logger = quiet
	st.srv = srv
	st.ts = httptest.NewServer(st.srv.Handler())
	t.Cleanup(func() {
		st.ts.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := st.d.Close(ctx); err != nil {
			t.Errorf("dispatcher close: %v", err)
		}
		if store != nil {
			store.Close()
		}
	})
	return st
}

const patient = "llmfleet-latency-budget-ms"

func TestStackSyncAndBatched(t *testing.T) {
	st := newStack(t, dispatch.Policy{})
	client := newClient(st.ts.URL)
	ctx := context.Background()

	var raw *http.Response
	msg, err := client.Messages.New(ctx, userParams("quick"), optResponse(&raw))
	if err != nil {
		t.Fatal(err)
	}
	if msg.Content[0].Text != "Answer to: quick" || raw.Header.Get("llmfleet-route") != "sync" || msg.Usage.ServiceTier != "standard" {
		t.Fatalf("sync: %s %v", msg.RawJSON(), raw.Header)
	}

	batched, err := client.Messages.New(ctx, userParams("patient"), optHeader(patient, "600000"), optResponse(&raw))
	if err != nil {
		t.Fatal(err)
	}
	if batched.Content[0].Text != "Answer to: patient" || batched.Usage.ServiceTier != "batch" ||
		raw.Header.Get("llmfleet-route") != "batch" || raw.Header.Get("llmfleet-batch-id") == "" {
		t.Fatalf("batched: %s %v", batched.RawJSON(), raw.Header)
	}

	// The same request streamed: the accumulated Message is the one the
	// non-streaming call got (the emulator's replies are deterministic).
	s := client.Messages.NewStreaming(ctx, userParams("patient"), optHeader(patient, "600000"), optResponse(&raw))
	var acc anthropic.Message
	for s.Next() {
		if err := acc.Accumulate(s.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if !sameJSON(t, acc.RawJSON(), batched.RawJSON()) {
		t.Fatalf("streamed batch\n got %s\nwant %s", acc.RawJSON(), batched.RawJSON())
	}
	if raw.Header.Get("llmfleet-route") != "batch" {
		t.Fatalf("streamed batch headers %v", raw.Header)
	}

	// Sync streaming passes the emulator's own stream through.
	s = client.Messages.NewStreaming(ctx, userParams("quick"), optResponse(&raw))
	acc = anthropic.Message{}
	for s.Next() {
		acc.Accumulate(s.Current())
	}
	if s.Err() != nil || acc.Content[0].Text != "Answer to: quick" || raw.Header.Get("llmfleet-route") != "sync" {
		t.Fatalf("sync stream: %v %s", s.Err(), acc.RawJSON())
	}

	stats := st.d.Stats()
	if stats.BatchedCalls != 2 || stats.BatchesEnded < 1 {
		t.Fatalf("dispatcher stats %+v", stats)
	}
	// The streamed request reached its batch as the very bytes of the
	// non-streaming one: "stream" was cut out, nothing else changed.
	subs := st.emu.Stats().Submissions
	if len(subs) != 2 || subs[0].ParamsHash != subs[1].ParamsHash {
		t.Fatalf("submissions %+v", subs)
	}
}

func TestStackToolUse(t *testing.T) {
	st := newStack(t, dispatch.Policy{})
	client := newClient(st.ts.URL, optHeader(patient, "600000"))
	params := userParams("weather in Paris? [tool]")
	params.Tools = []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{
		Name:        "get_weather",
		InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"query": map[string]any{"type": "string"}}},
	}}}
	want, err := client.Messages.New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	if want.StopReason != anthropic.StopReasonToolUse || len(want.Content) < 1 {
		t.Fatalf("no tool use: %s", want.RawJSON())
	}
	s := client.Messages.NewStreaming(context.Background(), params)
	var acc anthropic.Message
	for s.Next() {
		acc.Accumulate(s.Current())
	}
	if s.Err() != nil || !sameJSON(t, acc.RawJSON(), want.RawJSON()) {
		t.Fatalf("streamed tool use %v\n got %s\nwant %s", s.Err(), acc.RawJSON(), want.RawJSON())
	}
	tu := acc.Content[len(acc.Content)-1].AsToolUse()
	if tu.Name != "get_weather" || string(tu.Input) == "{}" {
		t.Fatalf("tool use block %+v", tu)
	}
}

func TestStackErrors(t *testing.T) {
	st := newStack(t, dispatch.Policy{})
	client := newClient(st.ts.URL)
	ctx := context.Background()
	var ae *anthropic.Error

	// Sync: the emulator's error passes through.
	_, err := client.Messages.New(ctx, userParams("[error:rate_limit_error]"))
	if !errors.As(err, &ae) || ae.StatusCode != 429 || ae.Type() != "rate_limit_error" || ae.Response.Header.Get("llmfleet-route") != "sync" {
		t.Fatalf("sync error %v", err)
	}
	// Batched: the errored result becomes the sync API's answer.
	_, err = client.Messages.New(ctx, userParams("[error:overloaded_error]"), optHeader(patient, "600000"))
	if !errors.As(err, &ae) || ae.StatusCode != 529 || ae.Type() != "overloaded_error" || ae.Response.Header.Get("llmfleet-route") != "batch" ||
		!strings.HasPrefix(ae.Response.Header.Get("llmfleet-batch-id"), "msgbatch_") {
		t.Fatalf("batched error %v (llmfleet-batch-id %q)", err, ae.Response.Header.Get("llmfleet-batch-id"))
	}
	_, err = client.Messages.New(ctx, userParams("[error:invalid_request_error]"), optHeader(patient, "600000"))
	if !errors.As(err, &ae) || ae.StatusCode != 400 || ae.Type() != "invalid_request_error" {
		t.Fatalf("batched error %v", err)
	}
	// Streaming: an error event once the stream has begun.
	s := client.Messages.NewStreaming(ctx, userParams("[error:overloaded_error]"), optHeader(patient, "600000"))
	for s.Next() {
	}
	if !errors.As(s.Err(), &ae) || ae.Type() != "overloaded_error" {
		t.Fatalf("batched stream error %v", s.Err())
	}
	// An expired request.
	_, err = client.Messages.New(ctx, userParams("[expire]"), optHeader(patient, "600000"))
	if !errors.As(err, &ae) || ae.StatusCode != 529 || ae.Response.Header.Get("llmfleet-batch-id") == "" {
		t.Fatalf("expired: %v", err)
	}
}

func TestStackTwoKeysNeverShareABatch(t *testing.T) {
	const perKey = 6
	st := newStack(t, dispatch.Policy{BatchMinSize: 2 * perKey, BatchWindow: 50 * time.Millisecond})
	keys := []string{"sk-key-one", "sk-key-two"}
	var mu sync.Mutex
	batchesOf := map[string]map[string]int{} // key → batch id → requests answered
	var wg sync.WaitGroup
	errc := make(chan error, 2*perKey)
	for _, key := range keys {
		batchesOf[key] = map[string]int{}
		client := newClient(st.ts.URL, optAPIKey(key), optHeader(patient, "600000"))
		for i := range perKey {
			wg.Go(func() {
				var raw *http.Response
				text := fmt.Sprintf("%s request %d", key, i)
				msg, err := client.Messages.New(context.Background(), userParams(text), optResponse(&raw))
				if err != nil {
					errc <- err
					return
				}
				if msg.Content[0].Text != "Answer to: "+text {
					errc <- fmt.Errorf("wrong answer %q for %q", msg.Content[0].Text, text)
					return
				}
				mu.Lock()
				batchesOf[key][raw.Header.Get("llmfleet-batch-id")]++
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	emuBatches := st.emu.Stats().Batches
	for _, key := range keys {
		for id, n := range batchesOf[key] {
			if id == "" {
				t.Fatalf("%s: batched response without llmfleet-batch-id", key)
			}
			for _, other := range keys {
				if other != key && batchesOf[other][id] > 0 {
					t.Fatalf("batch %s holds requests of both keys", id)
				}
			}
			if got := emuBatches[id].Requests; got != n {
				t.Fatalf("batch %s holds %d requests, %d answered with key %s", id, got, n, key)
			}
		}
	}
	// Each key sees its own batches through the pass-through batches API.
	for _, key := range keys {
		client := newClient(st.ts.URL, optAPIKey(key))
		page, err := client.Messages.Batches.List(context.Background(), anthropic.MessageBatchListParams{})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Data) != len(batchesOf[key]) {
			t.Fatalf("%s lists %d batches, answered from %d", key, len(page.Data), len(batchesOf[key]))
		}
		for _, b := range page.Data {
			if batchesOf[key][b.ID] == 0 {
				t.Fatalf("%s lists batch %s it was not answered from", key, b.ID)
			}
		}
	}
}

func TestStackPassThrough(t *testing.T) {
	st := newStack(t, dispatch.Policy{})
	client := newClient(st.ts.URL + "/budget/600000")
	n, err := client.Messages.CountTokens(context.Background(), anthropic.MessageCountTokensParams{
		Model: "claude-test", Messages: userParams("count me").Messages,
	})
	if err != nil || n.InputTokens < 1 {
		t.Fatalf("count_tokens: %v %+v", err, n)
	}
	// The Message Batches API itself goes through unchanged.
	b, err := client.Messages.Batches.New(context.Background(), anthropic.MessageBatchNewParams{
		Requests: []anthropic.MessageBatchNewParamsRequest{{CustomID: "own-1", Params: anthropic.MessageBatchNewParamsRequestParams{
			Model: "claude-test", MaxTokens: 10, Messages: userParams("mine").Messages,
		}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := client.Messages.Batches.Get(context.Background(), b.ID, anthropic.MessageBatchGetParams{})
	if err != nil || got.ID != b.ID {
		t.Fatalf("get batch: %v", err)
	}
	for got.ProcessingStatus != anthropic.MessageBatchProcessingStatusEnded {
		if got, err = client.Messages.Batches.Get(context.Background(), b.ID, anthropic.MessageBatchGetParams{}); err != nil {
			t.Fatal(err)
		}
	}
	rs := client.Messages.Batches.ResultsStreaming(context.Background(), b.ID, anthropic.MessageBatchResultsParams{})
	var results int
	for rs.Next() {
		if r := rs.Current(); r.CustomID != "own-1" || r.Result.Message.Content[0].Text != "Answer to: mine" {
			t.Fatalf("result %+v", r)
		}
		results++
	}
	if rs.Err() != nil || results != 1 {
		t.Fatalf("results: %v %d", rs.Err(), results)
	}
}

func TestStackMiddleware(t *testing.T) {
	st := newStack(t, dispatch.Policy{})
	client := newClient(st.emuTS.URL, option.WithMiddleware(anthropicmw.New(st.srv)))

	var raw *http.Response
	ctx := llmfleet.WithBudget(context.Background(), 10*time.Minute)
	msg, err := client.Messages.New(ctx, userParams("via sdk"), optResponse(&raw))
	if err != nil {
		t.Fatal(err)
	}
	if msg.Content[0].Text != "Answer to: via sdk" || raw.Header.Get("llmfleet-route") != "batch" || msg.Usage.ServiceTier != "batch" {
		t.Fatalf("batched: %s %v", msg.RawJSON(), raw.Header)
	}
	s := client.Messages.NewStreaming(ctx, userParams("via sdk"))
	var acc anthropic.Message
	for s.Next() {
		acc.Accumulate(s.Current())
	}
	if s.Err() != nil || !sameJSON(t, acc.RawJSON(), msg.RawJSON()) {
		t.Fatalf("streamed: %v %s", s.Err(), acc.RawJSON())
	}

	// A tight budget goes sync, through the SDK's own HTTP client.
	tight := llmfleet.WithBudget(context.Background(), time.Second)
	msg, err = client.Messages.New(tight, userParams("tight"), optResponse(&raw))
	if err != nil {
		t.Fatal(err)
	}
	if raw.Header.Get("llmfleet-route") != "sync" || msg.Usage.ServiceTier != "standard" {
		t.Fatalf("tight: %s %v", msg.RawJSON(), raw.Header)
	}
	s = client.Messages.NewStreaming(tight, userParams("tight"))
	acc = anthropic.Message{}
	for s.Next() {
		acc.Accumulate(s.Current())
	}
	if s.Err() != nil || acc.Content[0].Text != "Answer to: tight" {
		t.Fatalf("tight stream: %v %s", s.Err(), acc.RawJSON())
	}
	if got := st.d.Stats().BatchedCalls; got != 2 {
		t.Fatalf("batched calls %d", got)
	}
}
