package simulate

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/dispatch"
)

func run(t *testing.T, cfg Config, turns []Turn) Report {
	t.Helper()
	r, err := Run(cfg, turns)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// The same seed gives the same figures; costs add up.
func TestRunDeterministic(t *testing.T) {
	turns := Fleet(10, 3, 1)
	cfg := Config{Name: "llmfleet", Seed: 7}
	a := run(t, cfg, turns)
	b := run(t, cfg, turns)
	if !reflect.DeepEqual(a, b) {
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		t.Fatalf("two runs differ:\n%s\n%s", ja, jb)
	}
	j, _ := json.Marshal(a)
	t.Logf("%s", j)
	if a.Requests != 30 || a.Routes["sync"]+a.Routes["batch"] != 30 {
		t.Errorf("requests %d, routes %v", a.Requests, a.Routes)
	}
	if a.CostUSD <= 0 || a.CostUSD > a.SyncEquivalentUSD {
		t.Errorf("cost %v, sync equivalent %v", a.CostUSD, a.SyncEquivalentUSD)
	}
	if d := a.SyncEquivalentUSD - a.CostUSD - a.SavedUSD; d > 1e-9 || d < -1e-9 {
		t.Errorf("saved %v is not sync equivalent %v less cost %v", a.SavedUSD, a.SyncEquivalentUSD, a.CostUSD)
	}
	if a.Batches == 0 || a.Routes["batch"] == 0 {
		t.Errorf("nothing batched: %+v", a)
	}
	n := 0
	for _, p := range a.Latency {
		n += p.Count
	}
	if n != 30 {
		t.Errorf("latency counts %d", n)
	}
}

// Budgets of minutes and stragglers: the seed policy batches them all and
// a straggler breaks them; llmfleet rescues them (or sends them sync).
func TestSeedBreaksBudgetsLlmfleetKeeps(t *testing.T) {
	var turns []Turn
	for a := range 20 {
		for i := range 3 {
			t := Turn{Agent: string(rune('a' + a)), Turn: i, Model: "claude-sonnet-4-6", Key: "k",
				BudgetMS: (5 * time.Minute).Milliseconds(), InputTokens: 1000, OutputTokens: 200, ThinkMS: 1000}
			turns = append(turns, t)
		}
	}
	const fixed = 2 * time.Minute
	cfg := Config{Seed: 3, Straggler: Straggler{Fraction: 0.3, Factor: 10},
		Turnaround: func(string, *rand.Rand) time.Duration { return fixed }}
	ours := cfg
	ours.Name = "llmfleet"
	seed := cfg
	seed.Name, seed.Policy = "seed", SeedPolicy(dispatch.Policy{})
	o, s := run(t, ours, turns), run(t, seed, turns)
	t.Logf("llmfleet %+v", o)
	t.Logf("seed     %+v", s)
	if o.BudgetMisses != 0 {
		t.Errorf("llmfleet broke %d budgets", o.BudgetMisses)
	}
	if s.BudgetMisses == 0 {
		t.Errorf("the seed policy broke none")
	}
	if s.Rescued != 0 || s.Routes["sync"] != 0 {
		t.Errorf("seed: %+v", s)
	}
}

func TestBodyRoundTrip(t *testing.T) {
	raw := bodyOf("claude-sonnet-4-6", "a1/0", 1200, 300, 0, 0)
	b, ok := parseOwn(raw)
	if !ok || b != (Body{Model: "claude-sonnet-4-6", ID: "a1/0", InputTokens: 1200, OutputTokens: 300}) {
		t.Fatalf("%s: %+v %v", raw, b, ok)
	}
	raw = bodyOf("m", "x", 1, 2, 3, 4)
	if b, ok := parseOwn(raw); !ok || b != (Body{Model: "m", ID: "x", InputTokens: 1, OutputTokens: 2, CacheRead: 3, CacheWrite: 4}) {
		t.Fatalf("%s: %+v %v", raw, b, ok)
	}
	m, _ := message(b)
	var msg struct {
		Model string `json:"model"`
		Usage struct {
			InputTokens int64 `json:"input_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(m, &msg); err != nil || msg.Model != b.Model || msg.Usage.InputTokens != 1200 {
		t.Fatalf("message %s: %v", m, err)
	}
	// An id with characters to escape.
	raw = bodyOf("m", `a<"b">/0`, 1, 2, 0, 0)
	if b, err := parseBody(raw); err != nil || b.ID != `a<"b">/0` || b.InputTokens != 1 {
		t.Fatalf("%s: %+v %v", raw, b, err)
	}
	// Its fields in another order or with other characters are read
	// with encoding/json.
	for other, model := range map[string]string{`{"input_tokens":5,"model":"m"}`: "m", `{"model":"m,}","id":"x","input_tokens":1,"output_tokens":2}`: "m,}"} {
		if _, ok := parseOwn([]byte(other)); ok {
			t.Errorf("%s: read fast", other)
		}
		if b, err := parseBody([]byte(other)); err != nil || b.Model != model {
			t.Errorf("%s: %+v %v", other, b, err)
		}
	}
	// Any other body is read as a Messages API body.
	if _, err := parseBody([]byte(`{"model":"m","input_tokens":1,"other":2}`)); err == nil {
		t.Error("a body of neither shape: no error")
	}
	got, err := parseBody([]byte(`{"model":"claude-haiku-4-5","max_tokens":100,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil || got.Model != "claude-haiku-4-5" || got.InputTokens <= 0 || got.OutputTokens <= 0 || got.text == "" {
		t.Errorf("Messages body: %+v, %v", got, err)
	}
}

func TestFromLedger(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	turns := FromLedger([]llmfleet.LedgerEntry{
		{Time: t0.Add(time.Minute), Latency: 2 * time.Minute, Model: "m1", Budget: time.Hour, Usage: llmfleet.Usage{InputTokens: 10, OutputTokens: 2}},
		{Time: t0.Add(time.Minute), Latency: time.Minute, Model: "m1", Rescue: llmfleet.RescueLate},
		{Time: t0.Add(time.Minute), Latency: time.Second, Model: "m2", Usage: llmfleet.Usage{CacheReadInputTokens: 7, CacheCreationInputTokens: 3}},
	})
	if len(turns) != 2 {
		t.Fatalf("%+v", turns)
	}
	a, b := turns[0], turns[1]
	if a.AtMS != 0 || a.BudgetMS != time.Hour.Milliseconds() || a.InputTokens != 10 || a.Model != "m1" ||
		b.AtMS != (2*time.Minute-time.Second).Milliseconds() || b.BudgetMS != 0 || b.CacheReadTokens != 7 || b.CacheWriteTokens != 3 || a.Agent == b.Agent {
		t.Errorf("%+v", turns)
	}
}
