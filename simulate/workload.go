package simulate

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/llmfleet/llmfleet"
)

// Turn is one line of a workload: one request of an agent. An agent's
// first turn (the lowest Turn) arrives AtMS after the start; each later
// one ThinkMS after the agent's previous turn was answered.
type Turn struct {
	Agent        string `json:"agent"`
	Turn         int    `json:"turn"`
	AtMS         int64  `json:"at_ms"`
	ThinkMS      int64  `json:"think_ms"`
	Model        string `json:"model"`
	BudgetMS     int64  `json:"budget_ms"`
	InputTokens  int64  `json:"input_tokens"`
	OutputTokens int64  `json:"output_tokens"`
	// Key is the API key the agent sends with: requests of different keys
	// never share a batch.
	Key string `json:"key"`
	// CacheReadTokens and CacheWriteTokens are prompt cache reads and
	// (5-minute) writes, which are priced apart from InputTokens.
	CacheReadTokens  int64 `json:"cache_read_input_tokens,omitempty"`
	CacheWriteTokens int64 `json:"cache_creation_input_tokens,omitempty"`

	// The prompt's structure, for a turn whose usage the simulated
	// provider's prompt cache computes (see Prompted; the cache fields
	// above are then 0): SystemTokens of the system prompt System
	// (shared by the agents that send it with one key and model), then
	// HistoryTokens of the agent's conversation so far (its earlier
	// turns' prompts and answers), then NewTokens of new input;
	// InputTokens is their sum. Breakpoints are its cache breakpoints.
	System        string         `json:"system,omitempty"`
	SystemTokens  int64          `json:"system_tokens,omitempty"`
	HistoryTokens int64          `json:"history_tokens,omitempty"`
	NewTokens     int64          `json:"new_tokens,omitempty"`
	Breakpoints   []BreakpointAt `json:"breakpoints,omitempty"`
}

// BreakpointAt is a cache breakpoint of a Turn's prompt: cache_control
// on the block that ends its first Tokens tokens.
type BreakpointAt struct {
	Tokens int64 `json:"tokens"`
	// TTL is "5m" (or empty: the default) or "1h".
	TTL string `json:"ttl,omitempty"`
}

// Prompted reports whether the turn carries its prompt's structure.
func (t Turn) Prompted() bool { return t.System != "" || len(t.Breakpoints) > 0 }

// check reports what is wrong with a turn.
func (t Turn) check() error {
	if t.Agent == "" || t.Model == "" {
		return fmt.Errorf("agent and model are required")
	}
	for _, v := range []int64{t.AtMS, t.ThinkMS, t.BudgetMS, t.InputTokens, t.OutputTokens, t.CacheReadTokens,
		t.CacheWriteTokens, t.SystemTokens, t.HistoryTokens, t.NewTokens} {
		if v < 0 {
			return fmt.Errorf("negative field")
		}
	}
	if !t.Prompted() {
		if t.SystemTokens != 0 || t.HistoryTokens != 0 || t.NewTokens != 0 {
			return fmt.Errorf("system_tokens, history_tokens and new_tokens need a system or breakpoints")
		}
		return nil
	}
	if t.CacheReadTokens != 0 || t.CacheWriteTokens != 0 {
		return fmt.Errorf("a turn with a prompt structure gets its cache usage from the simulated cache: no cache_read_input_tokens or cache_creation_input_tokens")
	}
	if sum := t.SystemTokens + t.HistoryTokens + t.NewTokens; sum != t.InputTokens {
		return fmt.Errorf("input_tokens %d is not system_tokens + history_tokens + new_tokens (%d)", t.InputTokens, sum)
	}
	return checkBreakpoints(t.Breakpoints, t.InputTokens)
}

// checkBreakpoints reports what is wrong with a prompt's breakpoints, as
// the API would: at most 4, each within the prompt and past the one
// before, with a TTL of 5m or 1h, no 1h after a 5m.
func checkBreakpoints(bps []BreakpointAt, total int64) error {
	if len(bps) > 4 {
		return fmt.Errorf("a maximum of 4 blocks with cache_control may be provided, found %d", len(bps))
	}
	prev, short := int64(0), false
	for _, b := range bps {
		if b.Tokens <= prev || b.Tokens > total {
			return fmt.Errorf("breakpoint at %d tokens: breakpoints must grow, within the prompt's %d tokens", b.Tokens, total)
		}
		prev = b.Tokens
		switch b.TTL {
		case "", "5m":
			short = true
		case "1h":
			if short {
				return fmt.Errorf("a ttl='1h' breakpoint must not come after a ttl='5m' one")
			}
		default:
			return fmt.Errorf("breakpoint ttl %q is not 5m or 1h", b.TTL)
		}
	}
	return nil
}

// FromLedger turns recorded ledger entries into a workload to replay:
// each becomes a one-turn request of an agent of its own, arriving when
// the request arrived (its Time less its Latency), with its model, budget
// and usage (cache writes of either TTL count as 5-minute writes). Answers
// that a rescue made redundant (llmfleet.RescueLate) are left out: their
// request is there once already. All requests share one key, as the
// ledger records no credential. The earliest arrival is the start.
func FromLedger(entries []llmfleet.LedgerEntry) []Turn {
	var out []Turn
	var first time.Time
	for _, e := range entries {
		if e.Rescue == llmfleet.RescueLate {
			continue
		}
		if at := e.Time.Add(-e.Latency); first.IsZero() || at.Before(first) {
			first = at
		}
	}
	for i, e := range entries {
		if e.Rescue == llmfleet.RescueLate {
			continue
		}
		out = append(out, Turn{Agent: fmt.Sprintf("ledger%d", i), Model: e.Model, Key: "ledger",
			AtMS: e.Time.Add(-e.Latency).Sub(first).Milliseconds(), BudgetMS: e.Budget.Milliseconds(),
			InputTokens: e.Usage.InputTokens, OutputTokens: e.Usage.OutputTokens,
			CacheReadTokens: e.Usage.CacheReadInputTokens, CacheWriteTokens: e.Usage.CacheCreationInputTokens})
	}
	return out
}

// ReadWorkload reads a workload: one JSON Turn a line (blank lines are
// skipped).
func ReadWorkload(r io.Reader) ([]Turn, error) {
	var out []Turn
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		if len(line) == 0 {
			continue
		}
		var t Turn
		if err := json.Unmarshal(line, &t); err != nil {
			return nil, fmt.Errorf("workload line %d: %v", n, err)
		}
		if err := t.check(); err != nil {
			return nil, fmt.Errorf("workload line %d: %v", n, err)
		}
		out = append(out, t)
	}
	return out, sc.Err()
}

// WriteWorkload writes turns as ReadWorkload reads them.
func WriteWorkload(w io.Writer, turns []Turn) error {
	enc := json.NewEncoder(w)
	for _, t := range turns {
		if err := enc.Encode(t); err != nil {
			return err
		}
	}
	return nil
}

// FleetModels are the models Fleet draws from.
var FleetModels = []string{"claude-haiku-4-5", "claude-sonnet-4-6", "claude-opus-4-6"}

// fleetBudgets are the budgets Fleet draws from: seconds to hours.
var fleetBudgets = []time.Duration{
	5 * time.Second, 10 * time.Second, 30 * time.Second, time.Minute, 5 * time.Minute,
	10 * time.Minute, 30 * time.Minute, time.Hour, 4 * time.Hour, 24 * time.Hour,
}

// Fleet returns a workload of agents agents of turns dependent turns
// each: each agent keeps one model and one of 10 API keys, starts within
// the first 10 minutes, thinks 0-60s between turns, and draws each turn's
// budget from 5s to 24h and its usage from 500-20,000 input and 50-2,000
// output tokens. The same seed gives the same workload.
func Fleet(agents, turns int, seed uint64) []Turn {
	return FleetOf(FleetModels, agents, turns, seed)
}

// OpenAIFleetModels are the models FleetOf draws from for OpenAI: each
// has a flex tier.
var OpenAIFleetModels = []string{"gpt-5-mini", "gpt-5", "o3"}

// FleetOf is Fleet drawing from models.
func FleetOf(models []string, agents, turns int, seed uint64) []Turn {
	r := rand.New(rand.NewPCG(seed, 0xf1ee7))
	out := make([]Turn, 0, agents*turns)
	for a := range agents {
		model := models[r.IntN(len(models))]
		key := fmt.Sprintf("k%d", r.IntN(10))
		at := r.Int64N(10 * 60 * 1000)
		for i := range turns {
			t := Turn{Agent: fmt.Sprintf("a%d", a), Turn: i, Model: model, Key: key,
				BudgetMS:     fleetBudgets[r.IntN(len(fleetBudgets))].Milliseconds(),
				InputTokens:  500 + r.Int64N(19_500),
				OutputTokens: 50 + r.Int64N(1_950)}
			if i == 0 {
				t.AtMS = at
			} else {
				t.ThinkMS = r.Int64N(60_000)
			}
			out = append(out, t)
		}
	}
	return out
}
