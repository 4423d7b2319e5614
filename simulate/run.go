package simulate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/cachecost"
	"github.com/llmfleet/llmfleet/dispatch"
	"github.com/llmfleet/llmfleet/ledger"
	"github.com/llmfleet/llmfleet/pricing"
)

// agent is one agent's turns and where it is.
type agent struct {
	idx   int
	turns []Turn
}

// agentsOf groups turns by agent, in order of first appearance, each
// agent's turns in order.
func agentsOf(turns []Turn) []*agent {
	byAgent := map[string]*agent{}
	var agents []*agent
	for _, t := range turns {
		a := byAgent[t.Agent]
		if a == nil {
			a = &agent{idx: len(agents)}
			byAgent[t.Agent] = a
			agents = append(agents, a)
		}
		a.turns = append(a.turns, t)
	}
	for _, a := range agents {
		slices.SortStableFunc(a.turns, func(x, y Turn) int { return x.Turn - y.Turn })
	}
	return agents
}

// runner is one simulation under way.
type runner struct {
	cfg   Config
	clock *Clock
	prov  *Provider
	d     *dispatch.Dispatcher

	mu        sync.Mutex
	costNano  int64 // nano-USD, summed exactly whatever the order
	equivNano int64
	rescued   int
	lat       map[string][]time.Duration
	rep       Report
	end       time.Time
	cache     map[string]*CacheStats // nil: a workload without prompt structures
	failed    error
}

// Run simulates turns under cfg.
func Run(cfg Config, turns []Turn) (Report, error) {
	agents := agentsOf(turns)
	r := newRunner(cfg, slices.ContainsFunc(turns, Turn.Prompted))
	if err := r.d.Open(); err != nil {
		return Report{}, err
	}
	for _, a := range agents {
		r.clock.afterKeyed(time.Duration(a.turns[0].AtMS)*time.Millisecond, uint64(a.idx), func() { r.submit(a, 0) })
	}
	r.clock.Run()
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // nothing is left to wait for
	r.d.Close(ctx)
	return r.report(turns)
}

// newRunner sets up the provider and the engine of a run.
func newRunner(cfg Config, cached bool) *runner {
	prices := cfg.Prices
	if prices == nil {
		prices = pricing.Default()
	}
	r := &runner{cfg: cfg, clock: NewClock(start), lat: map[string][]time.Duration{}, end: start,
		rep: Report{Policy: cfg.Name, Routes: map[string]int{"sync": 0, "flex": 0, "batch": 0}, Latency: map[string]Percentiles{}}}
	if cached {
		r.cache = map[string]*CacheStats{}
	}
	r.prov = &Provider{ProviderName: cfg.Provider, Clock: r.clock, Turnaround: drawFrom(cfg.Turnaround, cfg.TurnaroundRange),
		SyncLatency: drawFrom(cfg.SyncLatency, cfg.SyncLatencyRange), Straggler: cfg.Straggler, Seed: cfg.Seed,
		FlexLatency: drawFrom(cfg.FlexLatency, cfg.FlexLatencyRange), FlexRefusal: cfg.FlexRefusal, Cache: cfg.Cache,
		FlexTimeout: flexTimeout(cfg.Provider)}
	r.d = &dispatch.Dispatcher{
		Providers: []llmfleet.Provider{r.prov},
		Policy:    cfg.Policy,
		Clock:     r.clock,
		Go:        r.clock.Go,
		Flex:      prices.Flex,
		Price:     func(e llmfleet.LedgerEntry) llmfleet.LedgerEntry { return ledger.Make(prices.Cost, e) },
		Prices: func(provider, model string) (cachecost.Prices, bool) {
			p, ok := prices.Lookup(provider, model)
			return cachecost.PricesOf(p), ok
		},
		Observe: func(e llmfleet.LedgerEntry, _ bool) { r.observe(e) },
	}
	return r
}

func nano(usd float64) int64 { return int64(math.Round(usd * 1e9)) }

// observe counts one ledger entry.
func (r *runner) observe(e llmfleet.LedgerEntry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.costNano += nano(e.CostUSD)
	r.equivNano += nano(ledger.SyncEquivalent(e))
	if e.Rescue == llmfleet.RescueSync {
		r.rescued++
	}
	if r.cache != nil {
		c := r.cache[string(e.Route)]
		if c == nil {
			c = &CacheStats{}
			r.cache[string(e.Route)] = c
		}
		c.add(e.Usage)
	}
	if r.cfg.Entries != nil {
		r.cfg.Entries(e)
	}
}

// submit submits turn i of agent a; its answer schedules the next.
func (r *runner) submit(a *agent, i int) {
	t := a.turns[i]
	arrived := r.clock.Now()
	budget := time.Duration(t.BudgetMS) * time.Millisecond
	routed := r.d.Policy.Budget(budget)
	req := &llmfleet.Request{Provider: r.prov.Name(), Credential: llmfleet.Credential{APIKey: t.Key}, Body: turnBody(t)}
	err := r.d.SubmitFunc(context.Background(), budget, req, func(resp *llmfleet.Response, err error) {
		r.answered(arrived, routed, resp, err)
		if i+1 < len(a.turns) {
			next := a.turns[i+1]
			r.clock.afterKeyed(time.Duration(next.ThinkMS)*time.Millisecond, uint64(a.idx), func() { r.submit(a, i+1) })
		}
	})
	if err != nil {
		r.mu.Lock()
		r.failed = errors.Join(r.failed, fmt.Errorf("%s turn %d: %w", t.Agent, t.Turn, err))
		r.mu.Unlock()
	}
}

// answered counts the answer to a turn that arrived at arrived with the
// budget routed.
func (r *runner) answered(arrived time.Time, routed time.Duration, resp *llmfleet.Response, err error) {
	now := r.clock.Now()
	l := now.Sub(arrived)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rep.Requests++
	route := "batch"
	switch {
	case resp != nil && resp.Route == llmfleet.RouteFlex:
		route = "flex"
	case resp != nil && resp.Route == llmfleet.RouteSync && resp.RequestID == "":
		route = "sync"
	case resp == nil && !errors.Is(err, llmfleet.ErrBudgetExceeded):
		route = "sync"
	}
	r.rep.Routes[route]++
	if err != nil {
		r.rep.Errors++
	}
	if routed > 0 && (errors.Is(err, llmfleet.ErrBudgetExceeded) || l > routed) {
		r.rep.BudgetMisses++
	}
	c := classOf(routed)
	r.lat[c] = append(r.lat[c], l)
	if now.After(r.end) {
		r.end = now
	}
}

// report is the run's report, once it has ended.
func (r *runner) report(turns []Turn) (Report, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failed != nil {
		return Report{}, r.failed
	}
	rep := r.rep
	s := r.d.Stats()
	rep.Batches, rep.ManagementCalls = s.BatchesSubmitted, s.ManagementCalls
	rep.FlexFallbacks = s.FlexFallbacks
	rep.CostUSD, rep.SyncEquivalentUSD = float64(r.costNano)/1e9, float64(r.equivNano)/1e9
	rep.SavedUSD = float64(r.equivNano-r.costNano) / 1e9
	if bound, ok := Bound(r.cfg, turns); ok {
		rep.BoundSavedUSD = bound
		if bound > 0 {
			rep.SavedOfBound = rep.SavedUSD / bound
		}
	}
	rep.Rescued = r.rescued
	if r.cache != nil {
		rep.Cache = map[string]CacheStats{}
		for route, c := range r.cache {
			rep.Cache[route] = *c
		}
	}
	rep.SimulatedMS = r.end.Sub(start).Milliseconds()
	for c, ls := range r.lat {
		sort.Slice(ls, func(i, j int) bool { return ls[i] < ls[j] })
		q := func(f float64) int64 { return ls[int(math.Ceil(f*float64(len(ls))))-1].Milliseconds() }
		rep.Latency[c] = Percentiles{Count: len(ls), P50: q(0.5), P90: q(0.9), P99: q(0.99), Max: ls[len(ls)-1].Milliseconds()}
	}
	return rep, nil
}
