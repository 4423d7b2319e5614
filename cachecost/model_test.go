package cachecost

import (
	"math"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
)

// sonnet is Sonnet's price: $3 / $15 per MTok, 5m writes 1.25x, 1h
// writes 2x, reads 0.1x, batch half price.
var sonnet = Prices{Input: 3e-6, Output: 15e-6, Write5m: 3.75e-6, Write1h: 6e-6, Read: 0.3e-6, Batch: 0.5, Flex: 0.5}

var t0 = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

// turn is the spec's typical agent turn: a 40k-token cached prefix, 2k
// new input, 1k output.
func turn(cache Entry) Request {
	return Request{Points: []Point{{Tokens: 40_000, TTL: 5 * time.Minute, Cache: cache}}, Tokens: 42_000, Output: 1000}
}

var (
	syncWarm  = Entry{SyncUntil: t0.Add(4 * time.Minute)}
	batchWarm = Entry{BatchUntil: t0.Add(4 * time.Minute)}
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestCost(t *testing.T) {
	m := Model{Prices: sonnet, Rates: Rates{Sync: 1, Batch: 0.7, Cross: 0.2}}
	syncNow := Option{Route: llmfleet.RouteSync, At: t0}
	batchSoon := Option{Route: llmfleet.RouteBatch, At: t0.Add(time.Minute)}
	for _, tc := range []struct {
		name string
		r    Request
		o    Option
		usd  float64
		hit  float64
	}{
		{"no breakpoint, sync", Request{Tokens: 2000, Output: 1000}, syncNow, 2000*3e-6 + 1000*15e-6, 0},
		{"no breakpoint, batch", Request{Tokens: 2000, Output: 1000}, batchSoon, 0.5 * (2000*3e-6 + 1000*15e-6), 0},
		// A warm turn read from the sync cache.
		{"sync hit", turn(syncWarm), syncNow, 40_000*0.3e-6 + 2000*3e-6 + 1000*15e-6, 1},
		// The same turn batched: the batch cache rarely sees it (0.2),
		// so its prefix is mostly written again, at half price.
		{"batch of a sync-warm turn", turn(syncWarm), batchSoon,
			0.5 * (0.2*40_000*0.3e-6 + 0.8*40_000*3.75e-6 + 2000*3e-6 + 1000*15e-6), 0.2},
		// A turn whose prefix batch items wrote: read at the best-effort rate.
		{"batch of a batch-warm turn", turn(batchWarm), batchSoon,
			0.5 * (0.7*40_000*0.3e-6 + 0.3*40_000*3.75e-6 + 2000*3e-6 + 1000*15e-6), 0.7},
		{"sync of a batch-warm turn", turn(batchWarm), syncNow,
			0.2*40_000*0.3e-6 + 0.8*40_000*3.75e-6 + 2000*3e-6 + 1000*15e-6, 0.2},
		// An entry that expires before the batch runs is no hit.
		{"expired by then", turn(Entry{BatchUntil: t0.Add(30 * time.Second)}), batchSoon,
			0.5 * (40_000*3.75e-6 + 2000*3e-6 + 1000*15e-6), 0},
		{"cold, TTL upgraded", turn(Entry{}), Option{Route: llmfleet.RouteBatch, At: t0, TTL1h: true},
			0.5 * (40_000*6e-6 + 2000*3e-6 + 1000*15e-6), 0},
		// A batch rescued half the time pays the rescue's sync call on top.
		{"rescue", turn(batchWarm), Option{Route: llmfleet.RouteBatch, At: t0, Late: 0.5, Rescue: 0.1},
			0.5*(0.7*40_000*0.3e-6+0.3*40_000*3.75e-6+2000*3e-6+1000*15e-6) + 0.05, 0.7},
		{"flex reads the sync cache", turn(syncWarm), Option{Route: llmfleet.RouteFlex, At: t0},
			0.5 * (40_000*0.3e-6 + 2000*3e-6 + 1000*15e-6), 1},
	} {
		e := m.Cost(tc.r, tc.o)
		if !near(e.USD, tc.usd) || !near(e.Hit, tc.hit) {
			t.Errorf("%s: $%.6f, hit %.2f; want $%.6f, hit %.2f", tc.name, e.USD, e.Hit, tc.usd, tc.hit)
		}
	}
}

// The longest live prefix is looked up first; when it misses (only in
// the other cache), a shorter one in the lookup's own cache may hit; the
// writes run from the prefix read to the last breakpoint, the 1-hour ones
// up to the last 1-hour breakpoint.
func TestCostOfSeveralBreakpoints(t *testing.T) {
	m := Model{Prices: sonnet, Rates: Rates{Sync: 1, Batch: 0.5, Cross: 0.25}}
	r := Request{Points: []Point{
		{Tokens: 10_000, TTL: time.Hour, Cache: Entry{SyncUntil: t0.Add(time.Hour)}}, // a shared system prompt
		{Tokens: 30_000, TTL: 5 * time.Minute, Cache: Entry{BatchUntil: t0.Add(time.Minute)}},
		{Tokens: 35_000, TTL: 5 * time.Minute},
	}, Tokens: 36_000, Output: 500}
	e := m.Cost(r, Option{Route: llmfleet.RouteSync, At: t0})
	// 0.25: read 30k, write 5k (5m); 0.75: read 10k, write 25k (5m).
	wantRead := 0.25*30_000 + 0.75*10_000
	want5m := 0.25*5_000 + 0.75*25_000
	if !near(e.Hit, 1) || !near(e.Read, wantRead) || !near(e.Write5m, want5m) || e.Write1h != 0 || e.Input != 1000 {
		t.Fatalf("estimate %+v; want hit 1, read %.0f, 5m writes %.0f, no 1h writes, input 1000", e, wantRead, want5m)
	}
	e = m.Cost(r, Option{Route: llmfleet.RouteBatch, At: t0, TTL1h: true})
	// Batch: 0.5 at 30k; else 0.25 (cross) at 10k; else none.
	hit := 0.5 + 0.5*0.25
	if !near(e.Hit, hit) || !near(e.Write5m, 0) || !near(e.Write1h, 0.5*5_000+0.125*25_000+0.375*35_000) {
		t.Fatalf("upgraded batch %+v", e)
	}
}

func est(r llmfleet.Route, usd float64) Estimate { return Estimate{Option: Option{Route: r}, USD: usd} }

func TestChoose(t *testing.T) {
	sync := est(llmfleet.RouteSync, 1.0)
	for _, tc := range []struct {
		name    string
		current llmfleet.Route
		options []Estimate
		want    Estimate
	}{
		{"cheapest, new conversation", "", []Estimate{est(llmfleet.RouteBatch, 0.6), est(llmfleet.RouteFlex, 0.7)}, est(llmfleet.RouteBatch, 0.6)},
		{"never above sync", "", []Estimate{est(llmfleet.RouteBatch, 1.2)}, sync},
		{"batch conversation stays batched within the margin", llmfleet.RouteBatch,
			[]Estimate{est(llmfleet.RouteBatch, 0.95)}, est(llmfleet.RouteBatch, 0.95)},
		{"batch conversation leaves batch once it costs more than sync", llmfleet.RouteBatch,
			[]Estimate{est(llmfleet.RouteBatch, 1.05)}, est(llmfleet.RouteSync, 1.0)},
		{"sync conversation stays within the margin", llmfleet.RouteSync,
			[]Estimate{est(llmfleet.RouteBatch, 0.95)}, sync},
		{"sync conversation moves to a clearly cheaper batch", llmfleet.RouteSync,
			[]Estimate{est(llmfleet.RouteBatch, 0.5)}, est(llmfleet.RouteBatch, 0.5)},
		{"flex shares the sync cache", llmfleet.RouteSync,
			[]Estimate{est(llmfleet.RouteFlex, 0.95), est(llmfleet.RouteBatch, 0.9)}, est(llmfleet.RouteFlex, 0.95)},
	} {
		got := Choose(tc.current, DefaultMargin, sync, tc.options...)
		if got.Route != tc.want.Route || got.USD != tc.want.USD {
			t.Errorf("%s: %s $%.2f, want %s $%.2f", tc.name, got.Route, got.USD, tc.want.Route, tc.want.USD)
		}
	}
}

func TestMissCost(t *testing.T) {
	m := Model{Prices: sonnet, Rates: Priors}
	written := llmfleet.Usage{InputTokens: 2000, CacheCreationInputTokens: 40_000}
	read := llmfleet.Usage{InputTokens: 2000, CacheReadInputTokens: 40_000}
	for _, tc := range []struct {
		name  string
		cache Entry
		route llmfleet.Route
		u     llmfleet.Usage
		want  float64
	}{
		{"batched turn of a sync-warm conversation, written again", syncWarm, llmfleet.RouteBatch, written, 0.5 * 40_000 * (3.75e-6 - 0.3e-6)},
		{"sync turn of a batch-warm conversation, written again", batchWarm, llmfleet.RouteSync, written, 40_000 * (3.75e-6 - 0.3e-6)},
		{"read across the caches after all", syncWarm, llmfleet.RouteBatch, read, 0},
		{"missed in its own cache: not the route's doing", batchWarm, llmfleet.RouteBatch, written, 0},
		{"nothing believed cached", Entry{}, llmfleet.RouteBatch, written, 0},
	} {
		if got := m.MissCost(turn(tc.cache), tc.route, t0, tc.u); !near(got, tc.want) {
			t.Errorf("%s: $%.6f, want $%.6f", tc.name, got, tc.want)
		}
	}
}

// The look-ahead weighs the state an option leaves a conversation in: at
// a poor batch cache a batched turn leaves its prefix where the turns to
// come read it seldom (they pay more ahead than from the sync cache), at
// a good one where they read it at half price (they pay less).
func TestAheadOf(t *testing.T) {
	r := Request{Points: []Point{{Tokens: 38_000, TTL: 5 * time.Minute}, {Tokens: 40_000, TTL: 5 * time.Minute}},
		Tokens: 40_010, Output: 800} // a turn that adds 2k tokens to its conversation
	a := Ahead{Weight: 0.9, Think: []time.Duration{time.Minute}, Batchable: true, Late: 0.05,
		SyncLatency: 2 * time.Second, BatchLatency: 3 * time.Minute}
	for _, tc := range []struct {
		rate          float64
		batchIsBetter bool
	}{{0.3, false}, {0.95, true}} {
		m := Model{Prices: sonnet, Rates: Rates{Sync: 1, Batch: tc.rate, Cross: 0}}
		s := m.AheadOf(r, Estimate{Option: Option{Route: llmfleet.RouteSync}}, a)
		b := m.AheadOf(r, Estimate{Option: Option{Route: llmfleet.RouteBatch}}, a)
		if s <= 0 || b <= 0 || (b < s) != tc.batchIsBetter {
			t.Errorf("batch rate %.2f: ahead of sync $%.4f, of batch $%.4f", tc.rate, s, b)
		}
	}
	// Think times past the TTL leave nothing warm: the state does not matter.
	a.Think = []time.Duration{20 * time.Minute}
	m := Model{Prices: sonnet, Rates: Rates{Sync: 1, Batch: 0.3}}
	s := m.AheadOf(r, Estimate{Option: Option{Route: llmfleet.RouteSync}}, a)
	b := m.AheadOf(r, Estimate{Option: Option{Route: llmfleet.RouteBatch}}, a)
	if !near(s, b) {
		t.Errorf("nothing warm ahead: $%.4f vs $%.4f", s, b)
	}
	if got := m.AheadOf(r, Estimate{}, Ahead{}); got != 0 {
		t.Errorf("no look-ahead: %v", got)
	}
}

func TestExplore(t *testing.T) {
	sync := Estimate{Option: Option{Route: llmfleet.RouteSync}, USD: 1.0}
	batch := Estimate{Option: Option{Route: llmfleet.RouteBatch}, USD: 0.9, Ahead: 0.3}
	for _, tc := range []struct {
		name      string
		measuring bool
		batch     Estimate
		want      llmfleet.Route
	}{
		{"measuring, within the margin", true, batch, llmfleet.RouteBatch},
		{"measured", false, batch, llmfleet.RouteSync},
		{"dearer than sync this turn", true, Estimate{Option: batch.Option, USD: 1.1}, llmfleet.RouteSync},
		{"beyond the margin", true, Estimate{Option: batch.Option, USD: 0.9, Ahead: 0.5}, llmfleet.RouteSync},
	} {
		if got := Explore(sync, sync, tc.batch, tc.measuring, 0.3); got.Route != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got.Route, tc.want)
		}
	}
}
