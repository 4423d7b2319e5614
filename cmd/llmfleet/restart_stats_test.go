package main

import (
	"context"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/llmfleet/llmfleet/emulator"
)

// startServeOn runs serve with args until the test ends or stop is
// called, and returns its base URL.
func startServeOn(t *testing.T, args ...string) (base string, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out := make(lineWriter, 4)
	done := make(chan error, 1)
	go func() { done <- runServe(ctx, append(args, "--listen", "127.0.0.1:0"), out, io.Discard) }()
	var line string
	select {
	case line = <-out:
	case err := <-done:
		cancel()
		t.Fatalf("serve ended: %v", err)
	}
	base = strings.Fields(strings.TrimPrefix(line, "llmfleet serving on "))[0]
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	}
	t.Cleanup(stop)
	return base, stop
}

// statsOf reads GET /llmfleet/v1/stats+query.
func statsOf(t *testing.T, base, query string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Get(base + "/llmfleet/v1/stats" + query)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var s map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, s
}

// A serve restarted on the same SQLite database shows in its stats (the
// dashboard's totals) and the dashboard's charts the calls made before
// the restart: the stats' default is the ledger's whole history, and the
// JSON names its period.
func TestStatsSurviveRestart(t *testing.T) {
	emu := &emulator.Server{Turnaround: func(string, *rand.Rand) time.Duration { return 0 }}
	emuTS := httptest.NewServer(emu)
	defer emuTS.Close()
	args := []string{"--anthropic-url", emuTS.URL, "--db", filepath.Join(t.TempDir(), "llmfleet.db")}

	base, stop := startServeOn(t, args...)
	client := anthropic.NewClient(option.WithBaseURL(base), option.WithAPIKey("sk-restart"), option.WithMaxRetries(0))
	for _, q := range []string{"first", "second"} {
		_, err := client.Messages.New(context.Background(), anthropic.MessageNewParams{Model: "claude-sonnet-4-6", MaxTokens: 50,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(q))}})
		if err != nil {
			t.Fatal(err)
		}
	}
	// A sync call's ledger entry is booked once its answer went out: the
	// stats show it soon after, not at once.
	_, s := statsOf(t, base, "")
	for deadline := time.Now().Add(10 * time.Second); s["sync_calls"] != 2.0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
		_, s = statsOf(t, base, "")
	}
	if s["sync_calls"] != 2.0 || s["period"] != "all" {
		t.Fatalf("before the restart: %v", s)
	}
	stop()

	base, _ = startServeOn(t, args...)
	for _, q := range []string{"", "?period=all", "?period=24h", "?period=1h"} {
		code, s := statsOf(t, base, q)
		want := strings.TrimPrefix(q, "?period=")
		if want == "" {
			want = "all"
		}
		if code != 200 || s["sync_calls"] != 2.0 || s["period"] != want || s["cost_usd"].(float64) <= 0 {
			t.Errorf("after the restart, stats%s: %d %v", q, code, s)
		}
	}
	// The dashboard's charts, too, go on from the ledger.
	var snap struct {
		Traffic []struct {
			SyncCalls int64 `json:"sync_calls"`
		}
		Savings []struct {
			SyncEquivalentUSD float64 `json:"sync_equivalent_usd"`
		}
	}
	getJSON(t, base+"/llmfleet/v1/dashboard", &snap)
	var calls int64
	for _, p := range snap.Traffic {
		calls += p.SyncCalls
	}
	if calls != 2 || len(snap.Savings) == 0 || snap.Savings[len(snap.Savings)-1].SyncEquivalentUSD <= 0 {
		t.Errorf("after the restart, the dashboard: %d sync calls, savings %+v", calls, snap.Savings)
	}
	code, s := statsOf(t, base, "?period=2w")
	if msg, _ := s["error"].(map[string]any)["message"].(string); code != 400 || !strings.Contains(msg, "1h, 24h, 7d, 30d or all") {
		t.Errorf("period=2w: %d %v", code, s)
	}
}
