package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/llmfleet/llmfleet/emulator"
	"github.com/llmfleet/llmfleet/geminiemu"
)

// geminiFlags are the flags of emulate's Gemini listener.
type geminiFlags struct {
	addr, flexLatency               *string
	turnaround, pending, retryDelay *time.Duration
	shed                            *float64
	shedStatus                      *int
}

// addGeminiFlags adds the Gemini emulator's flags to fs.
func addGeminiFlags(fs *flag.FlagSet) *geminiFlags {
	return &geminiFlags{
		addr: fs.String("gemini-addr", "", `address of a listener serving the Gemini API emulator (generateContent, streaming, flex, Batch Mode, files) under /v1beta, its model methods under /v1 too; "" for none, "127.0.0.1:0" for any free port`),
		turnaround: fs.Duration("gemini-turnaround", geminiemu.DefaultBatchTurnaround,
			"how long a Gemini batch takes from its create to its end (48h or more: it expires)"),
		pending:     fs.Duration("gemini-batch-pending", 0, "how long a Gemini batch stays PENDING after its create"),
		flexLatency: fs.String("gemini-flex-latency", "0", `how long a Gemini flex call (serviceTier "flex") waits before its answer, in the shape of --latency ("20s", "10s-1m,gemini-2.5-pro=1m-2m"; the real API's target: 1m to 15m)`),
		shed: fs.Float64("gemini-flex-shed", 0,
			"fraction of Gemini flex calls shed for lack of capacity (unbilled), from 0 to 1; the draws are seeded by --seed"),
		shedStatus: fs.Int("gemini-flex-shed-status", http.StatusServiceUnavailable,
			"status of a shed flex call: 503 (UNAVAILABLE) or 429 (RESOURCE_EXHAUSTED)"),
		retryDelay: fs.Duration("gemini-retry-delay", 0, "retryDelay of the RetryInfo a shed flex call carries (0: none)"),
	}
}

// server returns the Gemini emulator the flags set, its draws seeded by
// seed.
func (f *geminiFlags) server(seed int64) (*geminiemu.Server, error) {
	if !(*f.shed >= 0 && *f.shed <= 1) {
		return nil, fmt.Errorf("--gemini-flex-shed %v is not a fraction from 0 to 1", *f.shed)
	}
	if *f.shedStatus != http.StatusServiceUnavailable && *f.shedStatus != http.StatusTooManyRequests {
		return nil, fmt.Errorf("--gemini-flex-shed-status %d is neither 503 nor 429", *f.shedStatus)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"--gemini-turnaround", *f.turnaround}, {"--gemini-batch-pending", *f.pending},
		{"--gemini-retry-delay", *f.retryDelay}} {
		if d.v < 0 {
			return nil, fmt.Errorf("%s %s is negative", d.name, d.v)
		}
	}
	flexLat, err := emulator.ParseDurations("--gemini-flex-latency", latencyShape(*f.flexLatency))
	if err != nil {
		return nil, err
	}
	srv := &geminiemu.Server{BatchTurnaround: *f.turnaround, BatchPending: *f.pending, RetryDelay: *f.retryDelay}
	draws := newDraws(seed)
	srv.FlexDelay = func(model string) time.Duration {
		var d time.Duration
		draws.with(func(r *rand.Rand) { d = flexLat(model, r) })
		return d
	}
	if *f.shed > 0 {
		srv.Shed = func(string) int {
			shed := false
			draws.with(func(r *rand.Rand) { shed = r.Float64() < *f.shed })
			if shed {
				return *f.shedStatus
			}
			return 0
		}
	}
	return srv, nil
}

// draws are the Gemini emulator's random draws, seeded by --seed, one at
// a time.
type draws struct {
	mu sync.Mutex
	r  *rand.Rand
}

func newDraws(seed int64) *draws {
	return &draws{r: rand.New(rand.NewPCG(uint64(seed), 0x67656d696e69))}
}

// with runs f with the source, alone.
func (d *draws) with(f func(*rand.Rand)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	f(d.r)
}
