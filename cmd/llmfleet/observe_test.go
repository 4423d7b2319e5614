package main

import (
	"bufio"
	"bytes"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

func TestErrorCounter(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/typed":
			w.WriteHeader(529)
			io.WriteString(w, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
		case "/plain":
			w.WriteHeader(502)
			io.WriteString(w, "bad gateway")
		default:
			io.WriteString(w, "fine")
		}
	}))
	defer up.Close()
	var kinds []string
	c := &http.Client{Transport: &errorCounter{base: http.DefaultTransport, count: func(k string) { kinds = append(kinds, k) }}}
	for _, path := range []string{"/typed", "/plain", "/ok"} {
		resp, err := c.Get(up.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if path == "/typed" && !strings.Contains(string(body), "overloaded_error") {
			t.Fatalf("body not passed on: %s", body)
		}
	}
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	if _, err := c.Get(dead.URL); err == nil {
		t.Fatal("no error")
	}
	if got := strings.Join(kinds, ","); got != "overloaded_error,http_502,network" {
		t.Fatalf("kinds %s", got)
	}
}

func TestLogBodies(t *testing.T) {
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: one\n\n")
		http.NewResponseController(w).Flush()
		io.WriteString(w, "echo "+string(body))
	})
	logs := &syncBuffer{}
	ts := httptest.NewServer(logBodies(next, slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	defer ts.Close()
	req, _ := http.NewRequest("POST", ts.URL+"/budget/100/v1/messages", strings.NewReader(`{"secret prompt":1}`))
	req.Header.Set("x-api-key", "sk-do-not-log")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	first, _ := bufio.NewReader(resp.Body).ReadString('\n') // flushed before the rest
	resp.Body.Close()
	if first != "event: one\n" {
		t.Fatalf("first line %q", first)
	}
	ts.Close() // waits for the handler, and so the log line
	got := logs.String()
	if !strings.Contains(got, `secret prompt`) || !strings.Contains(got, `echo {`) || strings.Contains(got, "sk-do-not-log") {
		t.Fatalf("log: %s", got)
	}
}

func TestLoggerFormat(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	f := addObserveFlags(fs)
	if err := fs.Parse([]string{"--log-format", "json"}); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	l, err := f.logger(&buf, false)
	if err != nil {
		t.Fatal(err)
	}
	l.Debug("hidden")
	l.Info("shown", "n", 1)
	if got := buf.String(); !strings.HasPrefix(got, `{"time":`) || strings.Contains(got, "hidden") {
		t.Fatalf("log %q", got)
	}
	fs.Parse([]string{"--log-format", "xml"})
	if _, err := f.logger(&buf, false); err == nil {
		t.Fatal("xml accepted")
	}
}

func TestPriceTableConfig(t *testing.T) {
	var cfg serveConfig
	if err := yaml.Unmarshal([]byte("pricing:\n  anthropic:\n    models:\n      claude-sonnet-4-6: {input: 4}\n      m-1: {input: 1, output: 2}\n"), &cfg); err != nil {
		t.Fatal(err)
	}
	table, err := priceTable(cfg.Pricing)
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := table.Lookup("anthropic", "claude-sonnet-4-6"); !ok || p.Input != 4 || p.Output != 15 {
		t.Fatalf("override: %+v %v", p, ok)
	}
	if p, ok := table.Lookup("anthropic", "m-1"); !ok || p.CacheWrite1h != 2 || p.Batch != 0.5 {
		t.Fatalf("added model: %+v %v", p, ok)
	}
	if err := yaml.Unmarshal([]byte("pricing:\n  anthropic:\n    models:\n      m-2: {input: 1}\n"), &cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := priceTable(cfg.Pricing); err == nil {
		t.Fatal("a model without an output price accepted")
	}
	if table, err := priceTable(yaml.Node{}); err != nil || len(table.Models("anthropic")) == 0 {
		t.Fatalf("no pricing section: %v", err)
	}
}
