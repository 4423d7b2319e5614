package cachesim

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
)

var t0 = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

// bp is a breakpoint: prefix hash h, n tokens, ttl.
func bp(h string, n int64, ttl time.Duration) llmfleet.Breakpoint {
	return llmfleet.Breakpoint{Hash: h, Tokens: n, TTL: ttl}
}

func prompt(total int64, bps ...llmfleet.Breakpoint) llmfleet.Prompt {
	return llmfleet.Prompt{Tokens: total, Breakpoints: bps}
}

const m5, h1 = 5 * time.Minute, time.Hour

// The shared prompts: a 1000-token system prompt (1h), then a
// conversation at 3000 tokens (5m), then its next turn at 5000 (5m).
var (
	turn1 = prompt(3100, bp("sys", 1000, h1), bp("c1", 3000, m5))
	turn2 = prompt(5100, bp("sys", 1000, h1), bp("c1", 3000, m5), bp("c2", 5000, m5))
)

// step is one lookup of a scenario and the usage it must report.
type step struct {
	after  time.Duration // since t0
	key    string
	route  Route
	prompt llmfleet.Prompt
	want   Usage
}

func TestUse(t *testing.T) {
	full := Default()
	cross := Config{SyncHitRate: 1, BatchHitRate: 1, CrossRate: 1}
	never := Config{SyncHitRate: 1, BatchHitRate: 0}
	for _, tc := range []struct {
		name  string
		cfg   Config
		steps []step
	}{
		{"miss then hit", full, []step{
			{0, "k", Sync, turn1, Usage{Input: 100, Write1h: 1000, Write5m: 2000}},
			{time.Minute, "k", Sync, turn1, Usage{Input: 100, CacheRead: 3000}},
		}},
		{"the next turn reads the last and writes past it", full, []step{
			{0, "k", Sync, turn1, Usage{Input: 100, Write1h: 1000, Write5m: 2000}},
			{time.Minute, "k", Sync, turn2, Usage{Input: 100, CacheRead: 3000, Write5m: 2000}},
		}},
		{"keys never share", full, []step{
			{0, "k", Sync, turn1, Usage{Input: 100, Write1h: 1000, Write5m: 2000}},
			{time.Minute, "other", Sync, turn1, Usage{Input: 100, Write1h: 1000, Write5m: 2000}},
		}},
		{"5m entry expires, 1h lives", full, []step{
			{0, "k", Sync, turn1, Usage{Input: 100, Write1h: 1000, Write5m: 2000}},
			{6 * time.Minute, "k", Sync, turn1, Usage{Input: 100, CacheRead: 1000, Write5m: 2000}},
		}},
		{"expiry is exclusive", full, []step{
			{0, "k", Sync, turn1, Usage{Input: 100, Write1h: 1000, Write5m: 2000}},
			{5 * time.Minute, "k", Sync, turn1, Usage{Input: 100, CacheRead: 1000, Write5m: 2000}},
		}},
		{"a hit refreshes the TTL", full, []step{
			{0, "k", Sync, turn1, Usage{Input: 100, Write1h: 1000, Write5m: 2000}},
			{4 * time.Minute, "k", Sync, turn1, Usage{Input: 100, CacheRead: 3000}},
			{8 * time.Minute, "k", Sync, turn1, Usage{Input: 100, CacheRead: 3000}},
			{14 * time.Minute, "k", Sync, turn1, Usage{Input: 100, CacheRead: 1000, Write5m: 2000}},
		}},
		{"sync and batch caches apart", full, []step{
			{0, "k", Sync, turn1, Usage{Input: 100, Write1h: 1000, Write5m: 2000}},
			{time.Second, "k", Batch, turn1, Usage{Input: 100, Write1h: 1000, Write5m: 2000}},
			{2 * time.Second, "k", Batch, turn1, Usage{Input: 100, CacheRead: 3000}},
		}},
		{"cross rate 1: a batch reads the sync entry, writes its own", cross, []step{
			{0, "k", Sync, turn1, Usage{Input: 100, Write1h: 1000, Write5m: 2000}},
			{time.Second, "k", Batch, turn2, Usage{Input: 100, CacheRead: 3000, Write5m: 2000}},
			{2 * time.Second, "k", Sync, turn2, Usage{Input: 100, CacheRead: 5000}},
		}},
		{"batch hit rate 0: batches always write", never, []step{
			{0, "k", Batch, turn1, Usage{Input: 100, Write1h: 1000, Write5m: 2000}},
			{time.Second, "k", Batch, turn1, Usage{Input: 100, Write1h: 1000, Write5m: 2000}},
			{2 * time.Second, "k", Sync, turn1, Usage{Input: 100, Write1h: 1000, Write5m: 2000}},
			{3 * time.Second, "k", Sync, turn1, Usage{Input: 100, CacheRead: 3000}},
		}},
		{"minimum size", Config{SyncHitRate: 1, MinTokens: 2000}, []step{
			{0, "k", Sync, turn1, Usage{Input: 100, Write1h: 0, Write5m: 3000}},
			{time.Second, "k", Sync, turn1, Usage{Input: 100, CacheRead: 3000}},
		}},
		{"no breakpoints: all input", full, []step{
			{0, "k", Sync, prompt(700), Usage{Input: 700}},
			{time.Second, "k", Sync, prompt(0), Usage{Input: 1}},
		}},
		{"all 1h", full, []step{
			{0, "k", Sync, prompt(3000, bp("a", 1000, h1), bp("b", 3000, h1)), Usage{Input: 1, Write1h: 3000}},
			{2 * time.Hour, "k", Sync, prompt(3000, bp("a", 1000, h1), bp("b", 3000, h1)), Usage{Input: 1, Write1h: 3000}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := New(tc.cfg)
			r := rand.New(rand.NewPCG(1, 2))
			for i, s := range tc.steps {
				got := c.Use(Lookup{Key: s.key, Route: s.route, Now: t0.Add(s.after), Prompt: s.prompt}, r)
				if got != s.want {
					t.Fatalf("step %d: %+v, want %+v", i, got, s.want)
				}
			}
		})
	}
}

// A breakpoint reads an entry an earlier request wrote at a prefix it
// only looks back to.
func TestLookback(t *testing.T) {
	c := New(Default())
	r := rand.New(rand.NewPCG(1, 2))
	c.Use(Lookup{Key: "k", Now: t0, Prompt: prompt(2000, bp("a", 2000, m5))}, r)
	p := prompt(4000, bp("b", 4000, m5))
	got := c.Use(Lookup{Key: "k", Now: t0.Add(time.Minute), Prompt: p, Lookback: [][]Prefix{{{"x", 3000}, {"a", 2000}}}}, r)
	if want := (Usage{Input: 1, CacheRead: 2000, Write5m: 2000}); got != want {
		t.Fatalf("%+v, want %+v", got, want)
	}
	if !c.Live("k", Sync, "a", t0.Add(5*time.Minute+time.Second)) {
		t.Error("the looked-back entry was not refreshed")
	}
}

// Over many lookups, a best-effort cache is reached at its rate, and the
// other cache at the cross rate.
func TestRates(t *testing.T) {
	for _, tc := range []struct {
		name      string
		cfg       Config
		writer    Route
		reader    Route
		wantShare float64
	}{
		{"batch reads batch at 0.5", Config{SyncHitRate: 1, BatchHitRate: 0.5}, Batch, Batch, 0.5},
		{"batch reads batch at 0.3", Config{SyncHitRate: 1, BatchHitRate: 0.3}, Batch, Batch, 0.3},
		{"sync reads sync at 1", Default(), Sync, Sync, 1},
		{"sync reads sync at 0.9", Config{SyncHitRate: 0.9, BatchHitRate: 1}, Sync, Sync, 0.9},
		{"batch reads sync at cross 0.2", Config{SyncHitRate: 1, BatchHitRate: 1, CrossRate: 0.2}, Sync, Batch, 0.2},
		{"batch never reads sync by default", Default(), Sync, Batch, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const n = 4000
			hits := 0
			for i := range n {
				// A fresh cache each time: one writer, one reader.
				c := New(tc.cfg)
				r := rand.New(rand.NewPCG(uint64(i), 99))
				c.Use(Lookup{Key: "k", Route: tc.writer, Now: t0, Prompt: turn1}, rand.New(rand.NewPCG(0, 0)))
				if c.Use(Lookup{Key: "k", Route: tc.reader, Now: t0.Add(time.Second), Prompt: turn1}, r).CacheRead > 0 {
					hits++
				}
			}
			if got := float64(hits) / n; got < tc.wantShare-0.03 || got > tc.wantShare+0.03 {
				t.Fatalf("hit share %.3f, want %.2f", got, tc.wantShare)
			}
		})
	}
}

// The same seed gives the same answers.
func TestReproducible(t *testing.T) {
	run := func() []Usage {
		c := New(Config{SyncHitRate: 1, BatchHitRate: 0.5, CrossRate: 0.1})
		var out []Usage
		for i := range 50 {
			r := rand.New(rand.NewPCG(7, uint64(i)))
			out = append(out, c.Use(Lookup{Key: "k", Route: Route(i % 2), Now: t0.Add(time.Duration(i) * time.Second), Prompt: turn2}, r))
		}
		return out
	}
	a, b := run(), run()
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("lookup %d: %+v then %+v", i, a[i], b[i])
		}
	}
}

func TestBill(t *testing.T) {
	p := prompt(10_000, bp("s", 2000, h1), bp("t", 4000, h1), bp("c", 9000, m5))
	for _, tc := range []struct {
		name      string
		p         llmfleet.Prompt
		read, min int64
		want      Usage
	}{
		{"miss", p, 0, 0, Usage{Input: 1000, Write1h: 4000, Write5m: 5000}},
		{"read the first 1h", p, 2000, 0, Usage{Input: 1000, CacheRead: 2000, Write1h: 2000, Write5m: 5000}},
		{"read past the 1h ones", p, 4000, 0, Usage{Input: 1000, CacheRead: 4000, Write5m: 5000}},
		{"read a looked-back prefix", p, 3000, 0, Usage{Input: 1000, CacheRead: 3000, Write1h: 1000, Write5m: 5000}},
		{"read all", p, 9000, 0, Usage{Input: 1000, CacheRead: 9000}},
		{"minimum skips the short ones", p, 0, 5000, Usage{Input: 1000, Write5m: 9000}},
		{"nothing after the last", prompt(9000, bp("c", 9000, m5)), 0, 0, Usage{Input: 1, Write5m: 9000}},
		{"default TTL is 5m", prompt(100, bp("c", 50, 0)), 0, 0, Usage{Input: 50, Write5m: 50}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Bill(tc.p, tc.read, tc.min); got != tc.want {
				t.Fatalf("%+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestConfig(t *testing.T) {
	for _, tc := range []struct {
		cfg Config
		ok  bool
	}{
		{Default(), true},
		{Config{SyncHitRate: 0.5, BatchHitRate: 0, CrossRate: 1}, true},
		{Config{SyncHitRate: 1.5}, false},
		{Config{BatchHitRate: -0.1}, false},
		{Config{CrossRate: 2}, false},
		{Config{MinTokens: -1}, false},
	} {
		if err := tc.cfg.Validate(); (err == nil) != tc.ok {
			t.Errorf("%+v: %v", tc.cfg, err)
		}
	}
	if own, other := Default().Reach(Batch); own != 1 || other != 0 {
		t.Errorf("default batch reach %v %v", own, other)
	}
	if RouteOf(llmfleet.RouteFlex) != Sync || RouteOf(llmfleet.RouteBatch) != Batch || Batch.String() != "batch" {
		t.Error("RouteOf")
	}
	u := Usage{Input: 3, CacheRead: 4, Write5m: 5, Write1h: 6}.With(7)
	if u.InputTokens != 3 || u.CacheReadInputTokens != 4 || u.CacheCreationInputTokens != 11 ||
		u.CacheCreation.Ephemeral5mInputTokens != 5 || u.CacheCreation.Ephemeral1hInputTokens != 6 || u.OutputTokens != 7 {
		t.Errorf("With: %+v", u)
	}
}
