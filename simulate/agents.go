package simulate

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
)

// harness is a client program agents run in (a coding agent, a review
// bot...): its model, API key, system prompt and cache_control TTLs.
type harness struct {
	name, model, key string
	systemTokens     int64
	systemTTL        string // of the breakpoint closing the system prompt
	convTTL          string // of the conversation's breakpoints
}

// harnesses are AgentsCached's: three shared system prompts, cached with
// 5-minute TTLs (as Claude Code does by default), a 1-hour one on the
// system prompt, or 1-hour ones throughout.
var harnesses = []harness{
	{"code", "claude-sonnet-4-6", "k-code", 9_000, "5m", "5m"},
	{"review", "claude-opus-4-6", "k-review", 12_000, "1h", "5m"},
	{"triage", "claude-haiku-4-5", "k-triage", 6_000, "1h", "1h"},
}

// AgentsCachedName names the AgentsCached workload for --workload.
const AgentsCachedName = "agents-cached"

// Default size of AgentsCached: the scenario of issue 21.
const (
	DefaultCachedAgents = 60
	DefaultCachedTurns  = 10
)

// AgentsCached returns a workload of agents agents of turns dependent
// turns each, whose prompts carry their structure (see Turn.Prompted),
// as agent fleets send them: agent i runs in harness i mod 3 (its model,
// its key, its system prompt of 6,000 to 12,000 tokens, shared by the
// harness's agents and cached with cache_control); its first turn sends
// the system prompt and 1,500-4,000 tokens of task, each later one the
// conversation so far plus the previous answer and 800-3,000 tokens of
// tool results, so that prompts grow to about 35,000 tokens in 10 turns.
// Every turn has a breakpoint at the end of the system prompt, one at the
// end of the previous turn's prompt (which that turn wrote) and one at
// its own end. An agent starts within the first 10 minutes, thinks
// between turns (5-90s mostly, 2-15 minutes three times in ten) and has
// one budget, drawn from 5s to 24h, for all its turns; answers are
// 200-1,200 tokens. The same seed gives the same workload.
func AgentsCached(agents, turns int, seed uint64) []Turn {
	r := rand.New(rand.NewPCG(seed, 0xcac4e))
	out := make([]Turn, 0, agents*turns)
	for a := range agents {
		h := harnesses[a%len(harnesses)]
		budget := fleetBudgets[r.IntN(len(fleetBudgets))].Milliseconds()
		at := r.Int64N(10 * 60 * 1000)
		var history, prevOut int64
		for i := range turns {
			t := Turn{Agent: fmt.Sprintf("agent%02d", a), Turn: i, Model: h.model, Key: h.key, BudgetMS: budget,
				OutputTokens: 200 + r.Int64N(1_001), System: h.name, SystemTokens: h.systemTokens, HistoryTokens: history}
			if i == 0 {
				t.AtMS = at
				t.NewTokens = 1_500 + r.Int64N(2_501)
			} else {
				t.NewTokens = prevOut + 800 + r.Int64N(2_201)
				t.ThinkMS = 5_000 + r.Int64N(85_001)
				if r.Float64() < 0.3 {
					t.ThinkMS = 120_000 + r.Int64N(780_001)
				}
			}
			t.InputTokens = t.SystemTokens + t.HistoryTokens + t.NewTokens
			t.Breakpoints = []BreakpointAt{{Tokens: h.systemTokens, TTL: h.systemTTL}}
			if history > 0 {
				t.Breakpoints = append(t.Breakpoints, BreakpointAt{Tokens: h.systemTokens + history, TTL: h.convTTL})
			}
			t.Breakpoints = append(t.Breakpoints, BreakpointAt{Tokens: t.InputTokens, TTL: h.convTTL})
			out = append(out, t)
			history += t.NewTokens
			prevOut = t.OutputTokens
		}
	}
	return out
}

// Generate returns the workload a generator spec names, and whether it
// names one: "agents-cached" (AgentsCached of DefaultCachedAgents and
// DefaultCachedTurns) or "agents-cached:AGENTSxTURNS". Any other spec
// names no generator (a file, for the command).
func Generate(spec string, seed uint64) (turns []Turn, ok bool, err error) {
	agents, n, ok, err := parseGenerator(spec)
	if !ok || err != nil {
		return nil, ok, err
	}
	return AgentsCached(agents, n, seed), true, nil
}

// maxGenerated is the most turns a generator spec may ask for.
const maxGenerated = 1_000_000

// parseGenerator reads a generator spec (see Generate).
func parseGenerator(spec string) (agents, turns int, ok bool, err error) {
	name, size, sized := strings.Cut(spec, ":")
	if name != AgentsCachedName {
		return 0, 0, false, nil
	}
	if !sized {
		return DefaultCachedAgents, DefaultCachedTurns, true, nil
	}
	a, t, found := strings.Cut(size, "x")
	agents, err1 := strconv.Atoi(a)
	turns, err2 := strconv.Atoi(t)
	if !found || err1 != nil || err2 != nil || agents <= 0 || turns <= 0 || agents > maxGenerated/turns {
		return 0, 0, true, fmt.Errorf("workload %q: the size is not AGENTSxTURNS (at most %d turns in all)", spec, maxGenerated)
	}
	return agents, turns, true, nil
}
