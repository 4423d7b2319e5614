package main

import (
	"math/rand/v2"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/claude"
	"github.com/llmfleet/llmfleet/dispatch"
	"github.com/llmfleet/llmfleet/emulator"
	"github.com/llmfleet/llmfleet/proxy"
)

// TestFleetAgainstEmulator runs the example end to end over loopback, once
// through the library and once through the official Go SDK with llmfleet's
// middleware. The emulator's batches end after a few milliseconds, the
// dispatcher expects them to (a 100ms turnaround prior) and polls every
// 20ms, so the runs are short; nothing here asserts on time.
func TestFleetAgainstEmulator(t *testing.T) {
	for _, via := range []string{"lib", "sdk"} {
		t.Run(via, func(t *testing.T) {
			emu := &emulator.Server{Turnaround: func(string, *rand.Rand) time.Duration { return 5 * time.Millisecond }}
			srv := httptest.NewServer(emu)
			defer srv.Close()
			base := config{url: srv.URL, key: "test-key", model: "claude-haiku-4-5", via: via, n: 40, window: time.Second, poll: 20 * time.Millisecond, prior: 100 * time.Millisecond}

			patient := base
			patient.budget = 10 * time.Minute
			sum, err := run(t.Context(), patient)
			if err != nil {
				t.Fatal(err, sum.failures)
			}
			if sum.Stats.SyncCalls != 0 || sum.Routes["batch"] != 80 || sum.Routes["sync"] != 0 ||
				sum.Stats.BatchedCalls != 80 || sum.Stats.BatchesSubmitted > 8 {
				t.Fatalf("budget 10m: %+v", sum)
			}
			t.Logf("budget 10m: %d batches, %d management calls", sum.Stats.BatchesSubmitted, sum.Stats.ManagementCalls)
			if dup := emu.Stats().DuplicateParams(); len(dup) > 0 {
				t.Fatalf("submitted twice: %v", dup)
			}

			tight := base
			tight.budget = time.Second
			sum, err = run(t.Context(), tight)
			if err != nil {
				t.Fatal(err, sum.failures)
			}
			if sum.Routes["sync"] != 80 || sum.Routes["batch"] != 0 || sum.Stats.BatchedCalls != 0 {
				t.Fatalf("budget 1s: %+v", sum)
			}
			// Through the library the dispatcher makes the sync calls; through
			// the SDK the middleware hands them back to the SDK's own client.
			if want := map[string]int64{"lib": 80, "sdk": 0}[via]; sum.Stats.SyncCalls != want {
				t.Fatalf("budget 1s: %d sync calls by the dispatcher, want %d", sum.Stats.SyncCalls, want)
			}
		})
	}
}

// TestFleetThroughProxy runs the example with -via proxy against a proxy
// (proxy.Server over a dispatcher) on loopback in front of the emulator.
func TestFleetThroughProxy(t *testing.T) {
	emu := &emulator.Server{Turnaround: func(string, *rand.Rand) time.Duration { return 5 * time.Millisecond }}
	up := httptest.NewServer(emu)
	defer up.Close()
	upURL, _ := url.Parse(up.URL)
	d := &dispatch.Dispatcher{
		Providers: []llmfleet.Provider{&claude.Provider{BaseURL: up.URL}},
		Policy:    dispatch.Policy{BatchWindow: time.Second, PollInterval: 20 * time.Millisecond, MaxPollInterval: 20 * time.Millisecond, TurnaroundPrior: 100 * time.Millisecond},
	}
	if err := d.Open(); err != nil {
		t.Fatal(err)
	}
	defer d.Close(t.Context())
	px := httptest.NewServer((&proxy.Server{Submitter: d, Upstream: upURL}).Handler())
	defer px.Close()
	for budget, route := range map[time.Duration]llmfleet.Route{10 * time.Minute: "batch", time.Second: "sync"} {
		sum, err := run(t.Context(), config{url: px.URL, key: "test-key", model: "claude-haiku-4-5", via: "proxy", n: 10, budget: budget})
		if err != nil {
			t.Fatal(err, sum.failures)
		}
		if sum.Routes[route] != 20 {
			t.Fatalf("budget %v: routes %v, want 20 %s", budget, sum.Routes, route)
		}
	}
	if st := d.Stats(); st.BatchedCalls != 20 {
		t.Fatalf("proxy's dispatcher: %+v", st)
	}
}

func TestFleetRejectsUnknownVia(t *testing.T) {
	if _, err := run(t.Context(), config{via: "carrier-pigeon", url: "http://127.0.0.1:1", key: "k", n: 1}); err == nil {
		t.Fatal("no error for -via carrier-pigeon")
	}
}
