package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/llmfleet/llmfleet/openaiemu"
)

// TestServeOpenAIFace: the real binary with --openai-url in front of the
// OpenAI emulator: openai-go through /openai/v1, sync and batched, with
// the route on each answer and the spend in /llmfleet/v1/stats.
func TestServeOpenAIFace(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	logs := filepath.Join(dir, "logs")
	emu := &openaiemu.Server{BatchTurnaround: 100 * time.Millisecond}
	up := httptest.NewServer(emu)
	defer up.Close()
	anth := start(t, bin, logs, "emulate", "--listen", "127.0.0.1:0", "--turnaround", "1s")
	serve := start(t, bin, logs, "serve", "--listen", "127.0.0.1:0", "--anthropic-url", anth.url, "--openai-url", up.URL,
		"--db", filepath.Join(dir, "db"), "--secret-file", filepath.Join(dir, "secret"),
		"--batch-window", "100ms", "--poll-interval", "100ms", "--max-poll-interval", "200ms")
	c := openai.NewClient(option.WithBaseURL(serve.url+"/openai/v1"), option.WithAPIKey("sk-a"), option.WithMaxRetries(0))
	ask := func(p string) openai.ChatCompletionNewParams {
		return openai.ChatCompletionNewParams{Model: "gpt-4.1", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(p)}}
	}
	ctx := context.Background()
	var hr *http.Response
	res, err := c.Chat.Completions.New(ctx, ask("sync one"), option.WithResponseInto(&hr))
	if err != nil || res.Choices[0].Message.Content != "Answer to: sync one" || hr.Header.Get("Llmfleet-Route") != "sync" {
		t.Fatalf("sync: %v %v", err, hr.Header)
	}
	var wg sync.WaitGroup
	for _, p := range []string{"batch one", "batch two"} {
		wg.Go(func() {
			var hr *http.Response
			res, err := c.Chat.Completions.New(ctx, ask(p), option.WithHeader("llmfleet-route", "batch"), option.WithResponseInto(&hr))
			if err != nil || res.Choices[0].Message.Content != "Answer to: "+p || hr.Header.Get("Llmfleet-Route") != "batch" {
				t.Errorf("%s: %v %v", p, err, hr.Header)
			}
		})
	}
	wg.Wait()
	if b := emu.Stats().Billed; b["batch one"] != 1 || b["batch two"] != 1 || b["sync one"] != 1 {
		t.Fatalf("billed %v", b)
	}
	resp, err := http.Get(serve.url + "/llmfleet/v1/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	buf.ReadFrom(resp.Body)
	if !strings.Contains(buf.String(), `"openai"`) {
		t.Errorf("stats name no openai spend: %s", buf.String())
	}
}

// TestEmulateOpenAIListener: emulate --openai-addr serves the OpenAI
// emulator on a second listener and says where.
func TestEmulateOpenAIListener(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- runEmulate(ctx, []string{"--listen", "127.0.0.1:0", "--openai-addr", "127.0.0.1:0"}, &out, &errOut)
	}()
	re := regexp.MustCompile(`openai emulator listening on (http://\S+)`)
	var addr string
	for deadline := time.Now().Add(10 * time.Second); addr == "" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if m := re.FindStringSubmatch(out.String()); m != nil {
			addr = m[1]
		}
	}
	if addr == "" {
		t.Fatalf("no openai listener: %q %q", out.String(), errOut.String())
	}
	c := openai.NewClient(option.WithBaseURL(addr+"/v1"), option.WithAPIKey("k"), option.WithMaxRetries(0))
	res, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "gpt-4.1",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
	if err != nil || res.Choices[0].Message.Content != "Answer to: hi" {
		t.Fatalf("%+v %v", res, err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
