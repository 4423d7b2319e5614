package simulate

import (
	"math"
	"slices"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/cachesim"
	"github.com/llmfleet/llmfleet/pricing"
)

// BestName names the best router's report, OracleName the oracle's.
const (
	BestName   = "best"
	OracleName = "oracle"
)

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
// (Config.Cache), not the draws; it knows the distribution of the think
// times (the workload's own, pooled over its turns), and when it routes a
// turn the time since the agent's previous one (as a router sees it), not
// the think times of the turns to come. It knows how many turns an agent
// has and their sizes, which a router does not. It assumes:
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
	return bestCached(cfg, turns, BestName, thinkSample(turns))
}

// OracleCached returns the report of the oracle (OracleName): the best
// router of BestCached that knows, besides, each turn's think time when
// it weighs the turns to come, as no router can. It bounds what any
// router could save on the workload.
func OracleCached(cfg Config, turns []Turn) (rep Report, known bool) {
	return bestCached(cfg, turns, OracleName, nil)
}

// bestCached computes BestCached (thinks, the think times it weighs the
// turns to come over) or OracleCached (thinks nil), named name.
func bestCached(cfg Config, turns []Turn, name string, thinks []int64) (rep Report, known bool) {
	if (cfg.Turnaround != nil && cfg.TurnaroundRange == nil) || (cfg.SyncLatency != nil && cfg.SyncLatencyRange == nil) ||
		(cfg.FlexLatency != nil && cfg.FlexLatencyRange == nil) {
		return Report{}, false
	}
	b := newBest(cfg)
	b.thinks, b.cont = thinks, continuation(turns)
	rep = Report{Policy: name, Requests: len(turns), Routes: map[string]int{"sync": 0, "flex": 0, "batch": 0},
		Latency: map[string]Percentiles{}, Cache: map[string]CacheStats{}}
	var order []string
	byAgent := map[string][]Turn{}
	for _, t := range turns {
		if _, ok := byAgent[t.Agent]; !ok {
			order = append(order, t.Agent)
		}
		byAgent[t.Agent] = append(byAgent[t.Agent], t)
	}
	var nanos, syncNanos int64
	for _, a := range order {
		ts := byAgent[a]
		slices.SortStableFunc(ts, func(x, y Turn) int { return x.Turn - y.Turn })
		cost, sync := b.agent(ts, &rep)
		nanos += int64(math.Round(cost * 1e9))
		syncNanos += int64(math.Round(sync * 1e9))
	}
	rep.CostUSD, rep.ModelSyncUSD = float64(nanos)/1e9, float64(syncNanos)/1e9
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
	// thinks samples the workload's think times (milliseconds), for the
	// best router; nil for the oracle. cont is the share of the
	// workload's turns that have a next one.
	thinks []int64
	cont   float64
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
// routes and expected cache figures to rep; it returns its expected cost,
// and that of sending every turn sync under the same model.
//
// The value of a state after turn i is the least expected cost of the
// turns after it. The oracle (b.thinks nil) knows each turn's think time
// when it weighs the turns to come; the best router weighs them over the
// think times b.thinks samples, and knows only the think time of the turn
// it routes (the time since the previous turn, which a router sees).
func (b *best) agent(ts []Turn, rep *Report) (cost, sync float64) {
	n := len(ts)
	steps := make([]*step, n)
	for i, t := range ts {
		var prev *Turn
		if i > 0 {
			prev = &ts[i-1]
		}
		steps[i] = b.newStep(t, prev)
	}
	value := b.values(steps)
	s := noPrevious
	for i := range n {
		c, _ := steps[i].cost(b, syncAfter(i), 0)
		sync += c
	}
	for i := range n {
		_, r := steps[i].choose(b, s, value[i+1], b.next())
		c, _ := steps[i].cost(b, s, r)
		cost += c
		rep.Routes[string(bestRoutes[r])]++
		steps[i].account(b, s, r)
		s = r
	}
	return cost, sync
}

// syncAfter is the state of turn i when every turn before it went sync.
func syncAfter(i int) int {
	if i == 0 {
		return noPrevious
	}
	return 0
}

// extraTurns is how many turns past an agent's last the best router,
// which does not know which turn is the last, weighs: the last one's
// again, each with the chance that a turn has a next one.
const extraTurns = 40

// next is the weight of the turns to come: the chance that a turn has a
// next one for the best router, 1 for the oracle (which knows).
func (b *best) next() float64 {
	if b.thinks == nil {
		return 1
	}
	return b.cont
}

// values returns the value of each state after each turn: value[i][s],
// the least expected cost of turns i.. after state s (the previous turn's
// route). The oracle's are over the agent's own turns, their think times
// known; the best router's over its turns and extraTurns more, each turn
// to come weighed by the chance that it comes and over the think times
// b.thinks samples.
func (b *best) values(steps []*step) [][4]float64 {
	all := steps
	if b.thinks != nil {
		all = slices.Clone(steps)
		for range extraTurns {
			all = append(all, steps[len(steps)-1])
		}
	}
	tables := map[*step]*costTable{}
	value := make([][4]float64, len(all)+1)
	for i := len(all) - 1; i >= 0; i-- {
		if b.thinks == nil || i == 0 {
			for s := range 4 {
				value[i][s], _ = all[i].choose(b, s, value[i+1], b.next())
			}
			continue
		}
		tab := tables[all[i]]
		if tab == nil {
			tab = b.costTable(all[i])
			tables[all[i]] = tab
		}
		for s := range 4 {
			sum := 0.0
			for k := range b.thinks {
				sum += tab.least(s, k, value[i+1], b.next())
			}
			value[i][s] = sum / float64(len(b.thinks))
		}
	}
	return value
}

// costTable holds a turn's expected costs by state, route and think time
// sampled (NaN: the route may not be taken), computed once for the turn
// (the turns past the last are the last one's again).
type costTable struct {
	c [4][3][]float64
}

// costTable computes st's costs for each of b.thinks.
func (b *best) costTable(st *step) *costTable {
	tab := &costTable{}
	st.prices(b) // once, for the copies
	for s := range 4 {
		for r := range bestRoutes {
			tab.c[s][r] = make([]float64, len(b.thinks))
		}
	}
	for k, think := range b.thinks {
		at := st.withThink(think)
		for s := range 4 {
			for r := range bestRoutes {
				c, ok := at.cost(b, s, r)
				if !ok {
					c = math.NaN()
				}
				tab.c[s][r][k] = c
			}
		}
	}
	return tab
}

// least is the least expected cost of the turn after state s with the
// k-th think time, the turns after it valued by next with weight w.
func (tab *costTable) least(s, k int, next [4]float64, w float64) float64 {
	v := math.Inf(1)
	for r := range bestRoutes {
		if c := tab.c[s][r][k]; !math.IsNaN(c) && c+w*next[r] < v {
			v = c + w*next[r]
		}
	}
	return v
}

// choose returns the route index of least expected cost for the turn
// after state s, the turns after it valued by next, and that cost.
func (st *step) choose(b *best, s int, next [4]float64, w float64) (float64, int) {
	v, choice := math.Inf(1), 0
	for r := range bestRoutes {
		c, ok := st.cost(b, s, r)
		if ok && c+w*next[r] < v {
			v, choice = c+w*next[r], r
		}
	}
	return v, choice
}

// withThink returns the step with the think time think (milliseconds).
func (st *step) withThink(think int64) *step {
	c := *st
	c.t.ThinkMS = think
	return &c
}

// thinkSamples is how many think times the best router weighs a turn
// over.
const thinkSamples = 64

// thinkSample returns up to thinkSamples quantiles of the think times of
// turns that follow another (none: a single 0).
func thinkSample(turns []Turn) []int64 {
	var all []int64
	for _, t := range turns {
		if t.Turn > 0 {
			all = append(all, t.ThinkMS)
		}
	}
	if len(all) == 0 {
		return []int64{0}
	}
	slices.Sort(all)
	if len(all) <= thinkSamples {
		return all
	}
	out := make([]int64, thinkSamples)
	for i := range out {
		out[i] = all[(2*i+1)*len(all)/(2*thinkSamples)]
	}
	return out
}

// continuation returns the share of turns that have a next one (an
// agent's turns but its first, over its turns).
func continuation(turns []Turn) float64 {
	next := 0
	for _, t := range turns {
		if t.Turn > 0 {
			next++
		}
	}
	if len(turns) == 0 {
		return 0
	}
	return float64(next) / float64(len(turns))
}
