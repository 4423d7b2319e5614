package main

import (
	"context"
	"flag"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/llmfleet/llmfleet/emulator"
	"github.com/llmfleet/llmfleet/proxy"
)

// lineWriter sends each write to a channel.
type lineWriter chan string

func (w lineWriter) Write(p []byte) (int, error) {
	w <- string(p)
	return len(p), nil
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "llmfleet.yaml")
	if err := os.WriteFile(f, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestServeEndToEnd(t *testing.T) {
	emu := &emulator.Server{Turnaround: func(string, *rand.Rand) time.Duration { return 0 }}
	emuTS := httptest.NewServer(emu)
	defer emuTS.Close()

	cfg := writeFile(t, "listen: 127.0.0.1:1\n"+ // overridden by the flag below
		"anthropic-url: "+emuTS.URL+"\n"+
		"batch-window: 5ms\npoll-interval: 2ms\nmax-poll-interval: 5ms\nturnaround-prior: 10ms\n"+
		"default-budget: 10m\nping-interval: 1ms\n")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := make(lineWriter, 4)
	done := make(chan error, 1)
	go func() {
		done <- runServe(ctx, []string{"--config", cfg, "--listen", "127.0.0.1:0"}, out, io.Discard)
	}()
	var line string
	select {
	case line = <-out:
	case err := <-done:
		t.Fatalf("serve ended: %v", err)
	}
	base := strings.Fields(strings.TrimPrefix(line, "llmfleet serving on "))[0]
	if !strings.Contains(line, "; OpenAI face "+base+"/openai/v1, upstream https://api.openai.com)") {
		t.Errorf("the startup line names no OpenAI face: %q", line)
	}

	resp, err := http.Get(base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("healthz %d", resp.StatusCode)
	}

	client := anthropic.NewClient(option.WithBaseURL(base), option.WithAPIKey("sk-e2e"), option.WithMaxRetries(0))
	params := anthropic.MessageNewParams{Model: "claude-test", MaxTokens: 50,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("from the config"))}}
	var raw *http.Response
	msg, err := client.Messages.New(context.Background(), params, option.WithResponseInto(&raw))
	if err != nil {
		t.Fatal(err)
	}
	// default-budget 10m from the file: batched.
	if msg.Content[0].Text != "Answer to: from the config" || raw.Header.Get("llmfleet-route") != "batch" {
		t.Fatalf("got %s %v", msg.RawJSON(), raw.Header)
	}

	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve: %v", err)
	}
	if _, err := http.Get(base + "/healthz"); err == nil {
		t.Fatal("still serving after shutdown")
	}
}

func TestServeConfigPrecedence(t *testing.T) {
	cfg := writeFile(t, "batch-window: 1m\nbatch-min-size: 7\nlisten: 0.0.0.0:9\n")
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	window := fs.Duration("batch-window", 0, "")
	minSize := fs.Int("batch-min-size", 0, "")
	listen := fs.String("listen", "127.0.0.1:8787", "")
	if err := fs.Parse([]string{"--batch-window", "2s"}); err != nil {
		t.Fatal(err)
	}
	if _, err := loadServeConfig(fs, cfg); err != nil {
		t.Fatal(err)
	}
	if *window != 2*time.Second || *minSize != 7 || *listen != "0.0.0.0:9" {
		t.Fatalf("window %v min %d listen %s", *window, *minSize, *listen)
	}

	for _, bad := range []string{"nope: 1\n", "batch-window: soon\n", "batch-min-size: [1]\n", ": :\n"} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.Duration("batch-window", 0, "")
		fs.Int("batch-min-size", 0, "")
		if _, err := loadServeConfig(fs, writeFile(t, bad)); err == nil {
			t.Errorf("config %q accepted", bad)
		}
	}
}

func TestServeClientKeysConfig(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	cfg, err := loadServeConfig(fs, writeFile(t, "upstream-api-key-env: LLMFLEET_TEST_UPSTREAM\nclient-keys:\n  alice: "+proxy.HashKey("alice-key")+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"LLMFLEET_TEST_UPSTREAM": "sk-upstream"}
	keys, err := cfg.credentials(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if keys.Upstream.APIKey != "sk-upstream" || keys.Hashes[proxy.HashKey("alice-key")] != "alice" {
		t.Fatalf("keys %+v", keys.Hashes)
	}
	if _, err := cfg.credentials(func(string) string { return "" }); err == nil {
		t.Fatal("empty upstream key accepted")
	}
	if !keys.OpenAI.IsZero() {
		t.Fatal("an OpenAI key without openai-upstream-api-key-env")
	}
	cfg.OpenAIUpstreamAPIKeyEnv = "LLMFLEET_TEST_OPENAI"
	if _, err := cfg.credentials(func(k string) string { return env[k] }); err == nil {
		t.Fatal("an empty openai-upstream-api-key-env accepted")
	}
	env["LLMFLEET_TEST_OPENAI"] = "sk-openai-upstream"
	if keys, err = cfg.credentials(func(k string) string { return env[k] }); err != nil || keys.OpenAI.AuthToken != "sk-openai-upstream" {
		t.Fatalf("openai-upstream-api-key-env: %+v, %v", keys, err)
	}
	cfg.ClientKeys["bob"] = "not-a-hash"
	if _, err := cfg.credentials(func(k string) string { return env[k] }); err == nil {
		t.Fatal("malformed hash accepted")
	}
}
