package simulate

import (
	"math"
	"slices"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/cachesim"
	"github.com/llmfleet/llmfleet/pricing"
)

// BestName names the best router's report.
const BestName = "best"

// BestCached returns the report of the best router that knows the prompt
// cache model, on a workload with prompt structures under cfg: its
// expected cost (CostUSD), routes, cache reads and writes by route
// (expected, rounded) and rescues (expected, rounded). known is false
// when a draw function is set without its range (see Bound).
//
// It is an offline bound, computed per agent by dynamic programming over
// the agent's turns: the state is the route the previous turn took (which
// decides in which cache, and when, the prefix the next turn continues
// was written), and each turn takes the route of least expected cost
// over the rest of the agent's turns. It knows the distributions of the
// batch turnarounds, the sync and flex latencies (uniform over their
// ranges, the stragglers' mixture included) and the cache's rates
// (Config.Cache), not the draws. It assumes:
//
//   - a turn goes out the moment it arrives, in a batch of its own that
//     runs it at a uniform point of its turnaround and is seen to end at
//     once (no pool window, no pooling limits, no poll delay);
//   - as Bound does, a batched turn whose batch would come too late for
//     its budget is rescued by a sync call and pays both, with the
//     probability computed there; a batch is allowed only for a budget
//     over the policy's SyncMaxLatency, flex only for one covering the
//     top of the flex latency range (and a model the price table sells
//     in a flex tier); the rescue's own cache effects are left out;
//   - the shared prefixes (breakpoints within the system prompt) are
//     always live in both caches, kept warm by the other agents (the
//     lookup still has to reach a cache, at its rate); the agent's own
//     prefix (the longest breakpoint the previous turn also had) is live
//     in the cache of the previous turn's route when the time from that
//     turn's lookup to this one's is under its TTL;
//   - one draw per lookup decides which caches it reaches, as in
//     package cachesim, and the usage of each outcome is cachesim.Bill's.
//
// So it is optimistic where the engine pays for pooling, learning and
// the warmth of shared prefixes, and ignores how rescues and budgets
// shorten the time between turns.
func BestCached(cfg Config, turns []Turn) (rep Report, known bool) {
	if (cfg.Turnaround != nil && cfg.TurnaroundRange == nil) || (cfg.SyncLatency != nil && cfg.SyncLatencyRange == nil) ||
		(cfg.FlexLatency != nil && cfg.FlexLatencyRange == nil) {
		return Report{}, false
	}
	b := newBest(cfg)
	rep = Report{Policy: BestName, Requests: len(turns), Routes: map[string]int{"sync": 0, "flex": 0, "batch": 0},
		Latency: map[string]Percentiles{}, Cache: map[string]CacheStats{}}
	var order []string
	byAgent := map[string][]Turn{}
	for _, t := range turns {
		if _, ok := byAgent[t.Agent]; !ok {
			order = append(order, t.Agent)
		}
		byAgent[t.Agent] = append(byAgent[t.Agent], t)
	}
	var nanos int64
	for _, a := range order {
		ts := byAgent[a]
		slices.SortStableFunc(ts, func(x, y Turn) int { return x.Turn - y.Turn })
		nanos += int64(math.Round(b.agent(ts, &rep) * 1e9))
	}
	rep.CostUSD = float64(nanos) / 1e9
	rep.Rescued = int(math.Round(b.rescues))
	for r, s := range b.stats {
		rep.Cache[r] = s.round()
	}
	return rep, true
}

// Routes of the best router, and its states: the route of the previous
// turn, or none.
var bestRoutes = []llmfleet.Route{llmfleet.RouteSync, llmfleet.RouteFlex, llmfleet.RouteBatch}

const noPrevious = 3

// best holds what the best router knows.
type best struct {
	cfg      Config
	prices   *pricing.Table
	cache    cachesim.Config
	provider string
	syncMax  time.Duration
	poll     time.Duration
	turn     func(string) (time.Duration, time.Duration)
	sync     func(string) (time.Duration, time.Duration)
	flex     func(string) (time.Duration, time.Duration)
	delays   map[string]*[3]delays // per model, by route index
	stats    map[string]*expStats
	rescues  float64
}

func newBest(cfg Config) *best {
	b := &best{cfg: cfg, prices: cfg.Prices, cache: cachesim.Default(), provider: (&Provider{ProviderName: cfg.Provider}).Name(),
		turn: rangeOr(cfg.TurnaroundRange, defaultTurnaround), sync: rangeOr(cfg.SyncLatencyRange, defaultSyncLatency),
		flex: rangeOr(cfg.FlexLatencyRange, DefaultFlexLatency), delays: map[string]*[3]delays{}, stats: map[string]*expStats{}}
	if b.prices == nil {
		b.prices = pricing.Default()
	}
	if cfg.Cache != nil {
		b.cache = *cfg.Cache
	}
	pol := cfg.Policy.WithDefaults()
	b.syncMax, b.poll = pol.SyncMaxLatency, pol.PollInterval
	return b
}

// delaysOf returns a model's delays from a turn's arrival to its lookup,
// by route index: a sync call's latency, a flex call's, a batch request's
// run time.
func (b *best) delaysOf(model string) *[3]delays {
	if d, ok := b.delays[model]; ok {
		return d
	}
	d := &[3]delays{rangeDelays(b.sync(model)), rangeDelays(b.flex(model))}
	lo, hi := b.turn(model)
	d[2] = runDelays(lo, hi, b.cfg.Straggler)
	b.delays[model] = d
	return d
}

// agent routes one agent's turns by dynamic programming and adds its
// routes and expected cache figures to rep; it returns its expected cost.
func (b *best) agent(ts []Turn, rep *Report) float64 {
	n := len(ts)
	steps := make([]*step, n)
	for i, t := range ts {
		var prev *Turn
		if i > 0 {
			prev = &ts[i-1]
		}
		steps[i] = b.newStep(t, prev)
	}
	// value[i][s]: the least expected cost of turns i.. after state s.
	value := make([][4]float64, n+1)
	choice := make([][4]int, n)
	for i := n - 1; i >= 0; i-- {
		for s := range 4 {
			value[i][s], choice[i][s] = math.Inf(1), 0
			for r := range bestRoutes {
				c, ok := steps[i].cost(b, s, r)
				if ok && c+value[i+1][r] < value[i][s] {
					value[i][s], choice[i][s] = c+value[i+1][r], r
				}
			}
		}
	}
	s := noPrevious
	for i := range n {
		r := choice[i][s]
		rep.Routes[string(bestRoutes[r])]++
		steps[i].account(b, s, r)
		s = r
	}
	return value[0][noPrevious]
}
