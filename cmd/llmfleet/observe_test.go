package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"gopkg.in/yaml.v3"

	"github.com/llmfleet/llmfleet"
)

// ledgerStore is a Store whose AddLedger records entries, after waiting
// for gate if it is set.
type ledgerStore struct {
	llmfleet.Store
	gate    chan struct{}
	fail    error
	mu      sync.Mutex
	entries []llmfleet.LedgerEntry
	writes  int
}

func (s *ledgerStore) AddLedger(ctx context.Context, entries []llmfleet.LedgerEntry) error {
	if s.gate != nil {
		<-s.gate
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes++
	if s.fail != nil {
		return s.fail
	}
	s.entries = append(s.entries, entries...)
	return nil
}

func (s *ledgerStore) count() (entries, writes int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.entries), s.writes
}

func TestLedgerWriter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &ledgerStore{gate: make(chan struct{})}
		logs := &syncBuffer{}
		w := &ledgerWriter{store: st, backlog: 3, log: slog.New(slog.NewTextHandler(logs, nil))}
		w.start()
		w.Add(llmfleet.LedgerEntry{Model: "a"})
		synctest.Wait()                                  // the first write took it, and waits at the gate
		for _, m := range []string{"b", "c", "d", "e"} { // "e" overflows the backlog of 3
			w.Add(llmfleet.LedgerEntry{Model: m})
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := w.Flush(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("Flush with the writes held: %v", err)
		}
		close(st.gate)
		if err := w.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		if n, writes := st.count(); n != 4 || writes != 2 {
			t.Fatalf("%d entries in %d writes, want 4 in 2", n, writes)
		}
		if !strings.Contains(logs.String(), "ledger entries dropped") {
			t.Fatalf("no warning of the dropped entry: %s", logs)
		}
		w.Add(llmfleet.LedgerEntry{Model: "f"})
		if err := w.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		if n, _ := st.count(); n != 5 {
			t.Fatalf("Close left entries unwritten: %d", n)
		}
		w.Add(llmfleet.LedgerEntry{Model: "late"}) // dropped, not blocked
		if err := w.Close(context.Background()); err != nil {
			t.Fatal(err)
		}

		// A failing store: the entries count as handled, Flush returns.
		st = &ledgerStore{fail: errors.New("disk full")}
		w = &ledgerWriter{store: st, log: slog.New(slog.NewTextHandler(logs, nil))}
		w.start()
		w.Add(llmfleet.LedgerEntry{})
		if err := w.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		w.Close(context.Background())
		if !strings.Contains(logs.String(), "disk full") {
			t.Fatalf("store failure not logged: %s", logs)
		}
	})
}

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
