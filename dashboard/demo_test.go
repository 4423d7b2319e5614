package dashboard

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
)

// demoPrices are per-million-token input and output prices for the demo.
var demoPrices = map[string][2]float64{
	"claude-sonnet-4-6": {3, 15},
	"claude-haiku-4-5":  {1, 5},
	"claude-opus-4-7":   {5, 25},
}

// demoWorkload returns three hours of made-up fleet traffic up to now, the
// ledger summary of it as /llmfleet/v1/stats serves it, and a History fed
// with it.
func demoWorkload(now time.Time) (*History, map[string]any) {
	r := rand.New(rand.NewPCG(1, 2))
	h := &History{Bucket: 2 * time.Minute, Points: 90}
	type agg struct {
		calls, sync, batch, errs, unpriced, misses, in, out, w5, w1, rd int64
		cost, syncEq                                                    float64
	}
	byModel := map[string]*agg{}
	byClient := map[string]*agg{}
	clients := []string{"research-agents", "support-bot", "cred_3f9a0c1d2e4b5a6978c0d1e2"}
	total := &agg{}
	var misses []llmfleet.LedgerEntry
	start := now.Add(-3 * time.Hour)
	lastTurn := map[string]time.Time{}
	for t := start; t.Before(now); t = t.Add(20 * time.Second) {
		phase := float64(t.Sub(start)) / float64(3*time.Hour)
		n := int(3 + 4*math.Sin(phase*9)*math.Sin(phase*9) + r.Float64()*3)
		for range n {
			model := "claude-sonnet-4-6"
			switch x := r.Float64(); {
			case x < 0.28:
				model = "claude-haiku-4-5"
			case x < 0.36:
				model = "claude-opus-4-7"
			case x < 0.37:
				model = "claude-fable-5"
			}
			e := llmfleet.LedgerEntry{Time: t.Add(time.Duration(r.IntN(20)) * time.Second), Provider: "anthropic", Model: model,
				Route: llmfleet.RouteSync, Outcome: "ok", BudgetMet: true, Client: clients[r.IntN(len(clients))]}
			if byClient[e.Client] == nil {
				byClient[e.Client] = &agg{}
			}
			if r.Float64() < 0.72 {
				e.Route = llmfleet.RouteBatch
				e.Budget = time.Hour
				e.Turnaround = time.Duration(3+r.IntN(9)) * time.Minute
				e.Latency = e.Turnaround + 30*time.Second
			}
			e.Usage.InputTokens = int64(800 + r.IntN(4000))
			e.Usage.OutputTokens = int64(200 + r.IntN(1500))
			e.Usage.CacheReadInputTokens = int64(r.IntN(20000))
			e.Usage.CacheCreation.Ephemeral1hInputTokens = int64(r.IntN(3000))
			e.Usage.CacheCreationInputTokens = e.Usage.CacheCreation.Ephemeral1hInputTokens
			if r.Float64() < 0.006 {
				e.BudgetMet = false
				e.Budget = 10 * time.Minute
				e.Latency = 14 * time.Minute
				if r.IntN(2) == 0 {
					e.Outcome = "budget_exceeded"
					e.Latency = e.Budget
				}
			}
			if p, ok := demoPrices[model]; ok {
				u := e.Usage
				sync := (float64(u.InputTokens)*p[0] + float64(u.OutputTokens)*p[1] +
					float64(u.CacheCreation.Ephemeral1hInputTokens)*p[0]*2 + float64(u.CacheReadInputTokens)*p[0]*0.1) / 1e6
				e.Priced = true
				e.CostUSD, e.OtherRouteUSD = sync, sync/2
				if e.Route == llmfleet.RouteBatch {
					e.CostUSD, e.OtherRouteUSD = sync/2, sync
				}
			}
			if e.Route == llmfleet.RouteBatch && e.Time.Sub(lastTurn[model]) < 6*time.Minute {
				e.Turnaround = 0 // one turnaround point per model every few minutes
			} else if e.Route == llmfleet.RouteBatch {
				lastTurn[model] = e.Time
				if model == "claude-opus-4-7" {
					e.Turnaround *= 2
				}
			}
			h.Add(e)
			for _, a := range []*agg{total, byModel[model], byClient[e.Client]} {
				if a == nil {
					a = &agg{}
					byModel[model] = a
				}
				a.calls++
				if e.Route == llmfleet.RouteBatch {
					a.batch++
				} else {
					a.sync++
				}
				if e.Outcome != "ok" {
					a.errs++
				}
				if !e.BudgetMet {
					a.misses++
				}
				a.in += e.Usage.InputTokens
				a.out += e.Usage.OutputTokens
				a.w1 += e.Usage.CacheCreation.Ephemeral1hInputTokens
				a.rd += e.Usage.CacheReadInputTokens
				if !e.Priced {
					a.unpriced++
					continue
				}
				a.cost += e.CostUSD
				if e.Route == llmfleet.RouteBatch {
					a.syncEq += e.OtherRouteUSD
				} else {
					a.syncEq += e.CostUSD
				}
			}
			if !e.BudgetMet {
				misses = append(misses, e)
			}
		}
	}
	for t := now.Add(-40 * time.Minute); t.Before(now); t = t.Add(10 * time.Second) {
		x := float64(t.Sub(now.Add(-40*time.Minute))) / float64(time.Minute)
		if x > 22 && x < 27 {
			continue // the process was down: a gap
		}
		q := int64(math.Max(0, 40+35*math.Sin(x/3)+float64(r.IntN(8))))
		h.SampleQueue(t, q, int64(2+int(x/8)%3))
	}
	breakdown := func(a *agg) map[string]any {
		return map[string]any{"calls": a.calls, "sync_calls": a.sync, "batched_calls": a.batch, "errors": a.errs,
			"tokens":   map[string]any{"input": a.in, "output": a.out, "cache_write_5m": a.w5, "cache_write_1h": a.w1, "cache_read": a.rd},
			"cost_usd": a.cost, "sync_equivalent_usd": a.syncEq, "saved_usd": a.syncEq - a.cost, "budget_misses": a.misses,
			"unpriced_requests": a.unpriced}
	}
	models := map[string]any{}
	for m, a := range byModel {
		models[m] = breakdown(a)
	}
	sort.Slice(misses, func(i, j int) bool { return misses[i].Time.After(misses[j].Time) })
	if len(misses) > 8 {
		misses = misses[:8]
	}
	fable := byModel["claude-fable-5"]
	stats := breakdown(total)
	stats["batches_submitted"] = total.batch / 37
	stats["saved_percent"] = 100 * (total.syncEq - total.cost) / total.syncEq
	stats["unpriced_tokens"] = map[string]any{"input": fable.in, "output": fable.out}
	stats["by_model"] = models
	stats["by_route"] = map[string]any{}
	byClientJSON := map[string]any{}
	for c, a := range byClient {
		byClientJSON[c] = breakdown(a)
	}
	stats["by_client"] = byClientJSON
	stats["recent_budget_misses"] = misses
	return h, stats
}

// TestServeDemo serves the dashboard with made-up data, for looking at it
// in a browser. It runs only when DASHBOARD_DEMO_ADDR is set (for example
// 127.0.0.1:8089), for DASHBOARD_DEMO_SECONDS (default 120); with
// DASHBOARD_DEMO_EMPTY set it serves a fleet that has done nothing yet.
func TestServeDemo(t *testing.T) {
	addr := os.Getenv("DASHBOARD_DEMO_ADDR")
	if addr == "" {
		t.Skip("DASHBOARD_DEMO_ADDR not set")
	}
	secs, _ := strconv.Atoi(os.Getenv("DASHBOARD_DEMO_SECONDS"))
	if secs <= 0 {
		secs = 120
	}
	now := time.Now()
	h, stats := demoWorkload(now)
	if os.Getenv("DASHBOARD_DEMO_EMPTY") != "" {
		h, stats = &History{}, map[string]any{"by_model": map[string]any{}, "recent_budget_misses": []any{}}
	}
	statsJSON, err := json.Marshal(stats)
	if err != nil {
		t.Fatal(err)
	}
	src := &Source{
		History: h,
		Stats: func() llmfleet.Stats {
			return llmfleet.Stats{SyncCalls: 100, BatchedCalls: 200, QueueDepth: 37, BatchesInFlight: 3}
		},
		InFlight: func(ctx context.Context) ([]BatchInFlight, error) {
			n := time.Now()
			return []BatchInFlight{
				{ID: "lfb_7Qd2", UpstreamID: "msgbatch_01HkcTjaV5uDC8jWR4ZsDV8d", Models: []string{"claude-opus-4-7"}, Size: 12, State: "created", Since: n.Add(-83 * time.Minute)},
				{ID: "lfb_9Xa1", UpstreamID: "msgbatch_01JpQ3wZ8vTnK2mYbL6cR1eF", Models: []string{"claude-haiku-4-5", "claude-sonnet-4-6"}, Size: 64, State: "created", Since: n.Add(-6*time.Minute - 12*time.Second)},
				{ID: "lfb_2Bn8", Models: []string{"claude-sonnet-4-6"}, Size: 100, State: "intent", Since: n.Add(-45 * time.Second)},
			}, nil
		},
	}
	mux := http.NewServeMux()
	mux.Handle("/llmfleet/", handler(os.DirFS("."))) // edits show without a restart
	mux.Handle("/llmfleet/v1/dashboard", SnapshotHandler(src.Snapshot))
	mux.HandleFunc("/llmfleet/v1/stats", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(statsJSON)
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	fmt.Printf("dashboard demo at http://%s/llmfleet/\n", ln.Addr())
	time.Sleep(time.Duration(secs) * time.Second) // a manual demo, not a unit test
	srv.Close()
}
