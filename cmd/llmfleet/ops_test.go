package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"net"
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
)

func TestEnvFlags(t *testing.T) {
	cfg := writeFile(t, "batch-window: 1m\nbatch-min-size: 7\ndefault-budget: 3s\n")
	env := map[string]string{"LLMFLEET_BATCH_WINDOW": "9s", "LLMFLEET_BATCH_MIN_SIZE": "4", "LLMFLEET_LISTEN": "127.0.0.1:9"}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	window := fs.Duration("batch-window", 0, "")
	minSize := fs.Int("batch-min-size", 0, "")
	budget := fs.Duration("default-budget", 0, "")
	listen := fs.String("listen", "", "")
	// flag > env > config > default
	if err := parseFlags(fs, []string{"--batch-window", "2s"}, func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	if _, err := loadServeConfig(fs, cfg); err != nil {
		t.Fatal(err)
	}
	if *window != 2*time.Second || *minSize != 4 || *budget != 3*time.Second || *listen != "127.0.0.1:9" {
		t.Fatalf("window %v min %d budget %v listen %s", *window, *minSize, *budget, *listen)
	}

	fs = flag.NewFlagSet("t", flag.ContinueOnError)
	fs.Duration("default-budget", 0, "")
	err := parseFlags(fs, nil, func(k string) string {
		if k == "LLMFLEET_DEFAULT_BUDGET" {
			return "soon"
		}
		return ""
	})
	if err == nil || !strings.Contains(err.Error(), "LLMFLEET_DEFAULT_BUDGET") {
		t.Fatalf("invalid env value: %v", err)
	}
}

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		var out bytes.Buffer
		if code := run(context.Background(), args, &out, io.Discard); code != 0 {
			t.Fatalf("%v: exit %d", args, code)
		}
		if !strings.HasPrefix(out.String(), "llmfleet ") || !strings.Contains(out.String(), "go1") {
			t.Fatalf("%v: %q", args, out.String())
		}
	}
}

func TestServeBusyPortLeavesNoState(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dir := t.TempDir()
	err = runServe(context.Background(), []string{"--listen", ln.Addr().String(), "--db", filepath.Join(dir, "x.db")}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--listen") {
		t.Fatalf("serve on a busy port: %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("files left behind: %v", ents)
	}
}

func TestServeDBErrorNamesFlag(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o600)
	err := runServe(context.Background(), []string{"--listen", "127.0.0.1:0", "--db", filepath.Join(file, "x.db"),
		"--secret-file", filepath.Join(dir, "s")}, io.Discard, io.Discard)
	if err == nil || !strings.HasPrefix(err.Error(), "--db "+filepath.Join(file, "x.db")) {
		t.Fatalf("err %v", err)
	}
}

// jsonLines decodes the JSON lines of a log.
func jsonLines(t *testing.T, s string) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("not JSON: %q", sc.Text())
		}
		out = append(out, m)
	}
	return out
}

func TestServeJSONLogs(t *testing.T) {
	emuTS := httptest.NewServer(&emulator.Server{})
	defer emuTS.Close()
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := make(lineWriter, 4)
	var logs syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- runServe(ctx, []string{"--listen", "127.0.0.1:0", "--anthropic-url", emuTS.URL, "--log-format", "json",
			"--db", filepath.Join(dir, "x.db")}, out, &logs)
	}()
	var line string
	select {
	case line = <-out:
	case err := <-done:
		t.Fatalf("serve ended: %v", err)
	}
	var start struct {
		Msg, Addr, Upstream string
		OpenAIUpstream      string `json:"openai_upstream"`
	}
	if err := json.Unmarshal([]byte(line), &start); err != nil || start.Msg != "llmfleet serving on "+start.Addr || start.Upstream != emuTS.URL ||
		start.OpenAIUpstream != "https://api.openai.com" {
		t.Fatalf("startup line %q: %v", line, err)
	}
	resp, err := http.Get(start.Addr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("readyz %d", resp.StatusCode)
	}
	client := anthropic.NewClient(option.WithBaseURL(start.Addr), option.WithAPIKey("sk-secret-key"), option.WithMaxRetries(0))
	if _, err := client.Messages.New(ctx, anthropic.MessageNewParams{Model: "claude-sonnet-4-6", MaxTokens: 20,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}}); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve: %v", err)
	}
	if strings.Contains(logs.String(), "sk-secret-key") {
		t.Fatal("a key in the log")
	}
	var requests, stopped []map[string]any
	for _, m := range jsonLines(t, logs.String()) {
		switch m["msg"] {
		case "request":
			requests = append(requests, m)
		case "stopped":
			stopped = append(stopped, m)
		}
		if r, ok := m["retention"]; ok {
			if _, ok := r.(float64); !ok {
				t.Errorf("duration not in seconds: %v", m)
			}
		}
	}
	if len(requests) != 1 {
		t.Fatalf("%d access lines: %v", len(requests), requests)
	}
	a := requests[0]
	lat, ok := a["latency"].(float64)
	if a["method"] != "POST" || a["path"] != "/v1/messages" || a["route"] != "sync" || a["model"] != "claude-sonnet-4-6" ||
		a["status"] != float64(200) || !ok || lat <= 0 || lat > 60 || a["budget"] != float64(0) ||
		a["request_id"] == "" || a["key"] == "" || a["level"] != "INFO" {
		t.Fatalf("access line %v", a)
	}
	if len(stopped) != 1 {
		t.Fatalf("stopped lines %v", stopped)
	}
	stats, _ := stopped[0]["stats"].(map[string]any)
	if stats["sync_calls"] != float64(1) {
		t.Fatalf("shutdown stats %v", stopped[0])
	}
}

func TestServeDefaultSecretErrorNamesDB(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o600)
	db := filepath.Join(file, "x.db")
	err := runServe(context.Background(), []string{"--listen", "127.0.0.1:0", "--db", db}, io.Discard, io.Discard)
	if err == nil || !strings.HasPrefix(err.Error(), "--db "+db) {
		t.Fatalf("err %v", err)
	}
}
