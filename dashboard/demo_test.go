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
	"strconv"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/ledger"
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
func demoWorkload(now time.Time) (*History, ledger.Summary) {
	r := rand.New(rand.NewPCG(1, 2))
	h := &History{Bucket: 2 * time.Minute, Points: 90}
	clients := []string{"research-agents", "support-bot", "cred_3f9a0c1d2e4b5a6978c0d1e2"}
	var entries []llmfleet.LedgerEntry
	start := now.Add(-3 * time.Hour)
	lastTurn := map[string]time.Time{}
	for t := start; t.Before(now); t = t.Add(20 * time.Second) {
		phase := float64(t.Sub(start)) / float64(3*time.Hour)
		n := int(3 + 4*math.Sin(phase*9)*math.Sin(phase*9) + r.Float64()*3)
		for range n {
			e := demoEntry(r, t, clients)
			if e.Route == llmfleet.RouteBatch && e.Time.Sub(lastTurn[e.Model]) < 6*time.Minute {
				e.Turnaround = 0 // one turnaround point per model every few minutes
			} else if e.Route == llmfleet.RouteBatch {
				lastTurn[e.Model] = e.Time
				if e.Model == "claude-opus-4-7" {
					e.Turnaround *= 2
				}
			}
			h.Add(e)
			entries = append(entries, e)
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
	s := ledger.Summarize(entries, time.Time{}, time.Time{})
	s.BatchesSubmitted = s.BatchedCalls / 37
	s.RecentBudgetMisses = s.RecentBudgetMisses[:min(8, len(s.RecentBudgetMisses))]
	return h, s
}

// demoEntry makes up one priced request answered at t: mostly batched,
// its prompt mostly read from the cache, now and then a routing miss.
func demoEntry(r *rand.Rand, t time.Time, clients []string) llmfleet.LedgerEntry {
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
	if e.Route == llmfleet.RouteBatch && r.Float64() < 0.3 {
		e.Rewrite = llmfleet.RewriteTTL1h
	}
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
		write := float64(u.CacheCreation.Ephemeral1hInputTokens) * p[0] * 2 / 1e6
		sync := (float64(u.InputTokens)*p[0]+float64(u.OutputTokens)*p[1]+float64(u.CacheReadInputTokens)*p[0]*0.1)/1e6 + write
		e.Priced = true
		e.CostUSD, e.OtherRouteUSD = sync, sync/2
		if e.Route == llmfleet.RouteBatch {
			e.CostUSD, e.OtherRouteUSD = sync/2, sync
		}
		if r.Float64() < 0.08 { // its prefix was warm in the other route's cache
			e.MissUSD = write * e.CostUSD / sync
		}
	}
	return e
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
		h, stats = &History{}, ledger.Summarize(nil, time.Time{}, time.Time{})
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
