package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/cachesim"
	"github.com/llmfleet/llmfleet/emulator"
	"github.com/llmfleet/llmfleet/ledger"
	"github.com/llmfleet/llmfleet/pricing"
)

// agentBody is turn n of agent a's conversation: a shared system prompt
// cached for an hour, n earlier exchanges (the answers are fixed text, so
// that two runs send the same bodies), the last user message cached for
// 5 minutes.
func agentBody(a, n int) string {
	pad := strings.Repeat("context ", 1200)
	var msgs []string
	for i := 0; i <= n; i++ {
		cc := ""
		if i == n {
			cc = `,"cache_control":{"type":"ephemeral"}`
		}
		msgs = append(msgs, fmt.Sprintf(`{"role":"user","content":[{"type":"text","text":"agent %d, step %d: %s"%s}]}`, a, i, pad, cc))
		if i < n {
			msgs = append(msgs, fmt.Sprintf(`{"role":"assistant","content":"done with step %d"}`, i))
		}
	}
	harness := "careful" // the sync agents (odd) share their system prompt; each patient one has its own
	if a >= 0 && a%2 == 0 {
		harness = fmt.Sprint("patient ", a)
	}
	return fmt.Sprintf(`{"model":%q,"max_tokens":64,"system":[{"type":"text","text":"You are a %s agent. %s",`+
		`"cache_control":{"type":"ephemeral","ttl":"1h"}}],"messages":[%s]}`, billModel, harness, strings.Repeat("rules ", 3000), strings.Join(msgs, ","))
}

// cachedEmulator is an emulator whose batch cache reads what batches wrote
// 90% of the time and never what sync calls wrote.
func cachedEmulator(t *testing.T) (*emulator.Server, *httptest.Server) {
	emu := &emulator.Server{Turnaround: func(string, *rand.Rand) time.Duration { return time.Second },
		Cache: &cachesim.Config{SyncHitRate: 1, BatchHitRate: 0.9}, Logger: slog.New(slog.DiscardHandler)}
	ts := httptest.NewServer(emu)
	t.Cleanup(ts.Close)
	return emu, ts
}

// billOfStats prices what an emulator billed.
func billOfStats(st emulator.Stats) float64 {
	prices := pricing.Default()
	usd := 0.0
	for _, b := range st.Bills {
		route := llmfleet.RouteSync
		if b.Batch {
			route = llmfleet.RouteBatch
		}
		c, _ := prices.Cost("anthropic", b.Model, b.Usage, route)
		usd += c
	}
	return usd
}

// runAgents runs agents agents of turns dependent turns against base,
// each agent with the headers of hdr(agent), after one sync call that
// caches the system prompt they share (so that a run's first turns, all
// at once, do not each write it).
func runAgents(t *testing.T, base string, agents, turns int, hdr func(int) []string) {
	t.Helper()
	warm := &crashClient{t: t, key: "sk-ant-api03-cached-fleet"}
	if code, _, b := warm.do("POST", base+"/v1/messages", agentBody(-1, 0)); code != http.StatusOK {
		t.Fatalf("warm-up: %d %s", code, b)
	}
	var wg sync.WaitGroup
	for a := range agents {
		wg.Go(func() {
			c := &crashClient{t: t, key: "sk-ant-api03-cached-fleet"}
			for n := range turns {
				if code, _, b := c.do("POST", base+"/v1/messages", agentBody(a, n), hdr(a)...); code != http.StatusOK {
					t.Errorf("agent %d turn %d: %d %s", a, n, code, b)
					return
				}
			}
		})
	}
	wg.Wait()
}

// Issue 21: through serve, against the emulator with its cache model on
// (batch cache apart from the sync one, read 90% of the time), a fleet
// of agents whose turns carry growing cached prompts: half with patient
// budgets (routed by the cost model), half without (sync). The ledger's
// cost agrees with what the emulator billed, and its net saving with what
// the same traffic cost sent all sync (to a fresh emulator) less what it
// cost through llmfleet, each within 2% of the all-sync bill.
func TestCachedFleetLedgerAgreesWithTheBill(t *testing.T) {
	t.Parallel() // its own processes, state and ports; it mostly waits
	emu, emuTS := cachedEmulator(t)
	db := filepath.Join(t.TempDir(), "llmfleet.db")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := make(lineWriter, 4)
	logs := &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- runServe(ctx, []string{"--listen", "127.0.0.1:0", "--db", db, "--anthropic-url", emuTS.URL, "--log-format", "json",
			"--batch-window", "100ms", "--poll-interval", "50ms", "--max-poll-interval", "100ms", "--turnaround-prior", "1s",
			"--sync-latency-prior", "200ms", "--rescue-margin", "200ms", "--cache-batch-rate-prior", "0.9"}, out, logs)
	}()
	var line string
	select {
	case line = <-out:
	case err := <-done:
		t.Fatalf("serve ended: %v\n%s", err, logs)
	}
	var start struct{ Addr string }
	if err := json.Unmarshal([]byte(line), &start); err != nil {
		t.Fatal(err)
	}
	const agents, turns = 6, 5
	patient := func(a int) []string {
		if a%2 == 0 {
			return []string{"llmfleet-latency-budget-ms", "3600000"}
		}
		return nil
	}
	runAgents(t, start.Addr, agents, turns, patient)
	var s ledger.Summary
	for deadline := time.Now().Add(30 * time.Second); ; {
		getJSON(t, start.Addr+"/llmfleet/v1/stats", &s)
		if s.SyncCalls+s.BatchedCalls >= agents*turns+1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	billed := billOfStats(emu.Stats())

	// The same traffic, every turn sync, to a fresh emulator.
	base, baseTS := cachedEmulator(t)
	runAgents(t, baseTS.URL, agents, turns, func(int) []string { return nil })
	allSync := billOfStats(base.Stats())

	t.Logf("all sync $%.4f; through llmfleet: billed $%.4f, ledger paid $%.4f, saved $%.4f, net of routing misses $%.4f "+
		"(true saving $%.4f); %d sync, %d batched", allSync, billed, s.CostUSD, s.SavedUSD, s.NetSavedUSD, allSync-billed,
		s.SyncCalls, s.BatchedCalls)
	if math.Abs(s.CostUSD-billed) > 0.02*allSync {
		t.Errorf("the ledger paid $%.4f, the emulator billed $%.4f", s.CostUSD, billed)
	}
	if math.Abs(s.NetSavedUSD-(allSync-billed)) > 0.02*allSync {
		t.Errorf("the ledger's net saving $%.4f, the bill's $%.4f", s.NetSavedUSD, allSync-billed)
	}
	if billed > allSync*1.001 {
		t.Errorf("llmfleet paid $%.4f, more than all sync $%.4f", billed, allSync)
	}
}
