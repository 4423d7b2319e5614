package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go/v3"
	oaioption "github.com/openai/openai-go/v3/option"

	"github.com/llmfleet/llmfleet/emulator"
	"github.com/llmfleet/llmfleet/ledger"
	"github.com/llmfleet/llmfleet/openaiemu"
)

// upstream-timeout (here from the config file) cuts a call neither
// upstream answers in time, on both faces, with 504 timeout_error saying
// so, whatever its budget; the cut calls are in the ledger. The hung
// upstreams are the emulator's [slow:10m] and an OpenAI emulator holding
// its calls until the test ends; the timeout is 200ms of real time.
func TestServeUpstreamTimeout(t *testing.T) {
	emuTS := httptest.NewServer(&emulator.Server{})
	defer emuTS.Close()
	quit := make(chan struct{})
	oaiTS := httptest.NewServer(&openaiemu.Server{Fault: func(string) (int, string) {
		<-quit
		return 0, ""
	}})
	defer oaiTS.Close()
	defer close(quit) // before oaiTS.Close, which waits for the calls held

	cfg := writeFile(t, "anthropic-url: "+emuTS.URL+"\nopenai-url: "+oaiTS.URL+"\nupstream-timeout: 200ms\n")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := make(lineWriter, 4)
	done := make(chan error, 1)
	go func() {
		done <- runServe(ctx, []string{"--config", cfg, "--listen", "127.0.0.1:0", "--db", filepath.Join(t.TempDir(), "l.db")}, out, io.Discard)
	}()
	var line string
	select {
	case line = <-out:
	case err := <-done:
		t.Fatalf("serve ended: %v", err)
	}
	base := strings.Fields(strings.TrimPrefix(line, "llmfleet serving on "))[0]

	client := anthropic.NewClient(option.WithBaseURL(base), option.WithAPIKey("sk-timeout"), option.WithMaxRetries(0))
	params := anthropic.MessageNewParams{Model: "claude-haiku-4-5", MaxTokens: 50,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("[slow:10m] hung"))}}
	for _, budget := range []string{"", "600000"} {
		var opts []option.RequestOption
		if budget != "" {
			opts = append(opts, option.WithHeader("llmfleet-latency-budget-ms", budget), option.WithHeader("llmfleet-route", "sync"))
		}
		_, err := client.Messages.New(context.Background(), params, opts...)
		var apiErr *anthropic.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusGatewayTimeout || apiErr.Type() != "timeout_error" ||
			!strings.Contains(apiErr.Error(), "--upstream-timeout") {
			t.Fatalf("budget %q: %v, want 504 timeout_error naming --upstream-timeout", budget, err)
		}
	}

	oai := openai.NewClient(oaioption.WithBaseURL(base+"/openai/v1"), oaioption.WithAPIKey("sk-timeout"), oaioption.WithMaxRetries(0))
	_, err := oai.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "gpt-4.1",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hung")}})
	var oaiErr *openai.Error
	if !errors.As(err, &oaiErr) || oaiErr.StatusCode != http.StatusGatewayTimeout || oaiErr.Type != "timeout_error" ||
		!strings.Contains(oaiErr.Message, "--upstream-timeout") {
		t.Fatalf("OpenAI face: %v, want 504 timeout_error naming --upstream-timeout", err)
	}

	// The three cut calls are paid for all we know: in the ledger, their
	// cost estimated.
	var s ledger.Summary
	for deadline := time.Now().Add(10 * time.Second); ; {
		getJSON(t, base+"/llmfleet/v1/stats", &s)
		if s.SyncCalls >= 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if s.SyncCalls != 3 || s.Errors != 3 || s.CostUSD <= 0 {
		b, _ := json.Marshal(s)
		t.Fatalf("summary %s, want 3 sync calls, errors, and their estimated cost", b)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// serve -h names --upstream-timeout and llmfleet-deadline: hard.
func TestServeHelpNamesDeadlines(t *testing.T) {
	var help bytes.Buffer
	runServe(context.Background(), []string{"-h"}, io.Discard, &help)
	for _, s := range []string{"-upstream-timeout duration", "(default 10m0s)", "upstream-timeout: 10m", "llmfleet-deadline: hard"} {
		if !strings.Contains(help.String(), s) {
			t.Errorf("serve -h lacks %q", s)
		}
	}
}
