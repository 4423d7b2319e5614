package simulate

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/cachesim"
)

// cachedTurn is turn n of agent a of a conversation with a 1000-token
// system prompt "sys" (1h) and 500 new tokens a turn (5m breakpoints).
func cachedTurn(a string, n int) Turn {
	t := Turn{Agent: a, Turn: n, Model: "claude-sonnet-4-6", Key: "k", OutputTokens: 100, System: "sys",
		SystemTokens: 1000, HistoryTokens: int64(n) * 500, NewTokens: 500}
	t.InputTokens = t.SystemTokens + t.HistoryTokens + t.NewTokens
	t.Breakpoints = []BreakpointAt{{Tokens: 1000, TTL: "1h"}}
	if n > 0 {
		t.Breakpoints = append(t.Breakpoints, BreakpointAt{Tokens: 1000 + t.HistoryTokens})
	}
	t.Breakpoints = append(t.Breakpoints, BreakpointAt{Tokens: t.InputTokens, TTL: "5m"})
	return t
}

// A turn's body carries its prompt; Inspect reads it as a provider
// parses a real request: the next turn's prompt extends this one's, the
// system prompt's prefix is shared by the agents sending it.
func TestInspectPrompt(t *testing.T) {
	p := &Provider{Clock: NewClock(start)}
	inspect := func(tn Turn) llmfleet.Prompt {
		t.Helper()
		info, err := p.Inspect(&llmfleet.Request{Body: turnBody(tn)})
		if err != nil || info.Model != tn.Model {
			t.Fatalf("inspect %s: %+v %v", turnBody(tn), info, err)
		}
		if want := promptOfTurn(tn); !samePrompt(info.Prompt, want) {
			t.Fatalf("inspect %+v, want %+v", info.Prompt, want)
		}
		return info.Prompt
	}
	a0, a1, b0 := inspect(cachedTurn("a", 0)), inspect(cachedTurn("a", 1)), inspect(cachedTurn("b", 0))
	if len(a1.Breakpoints) != 3 || a1.Breakpoints[1].Hash != a0.Breakpoints[1].Hash || a1.Breakpoints[1].Tokens != 1500 {
		t.Errorf("turn 1 does not extend turn 0: %+v then %+v", a0, a1)
	}
	if a0.Breakpoints[0].Hash != b0.Breakpoints[0].Hash || a0.Breakpoints[1].Hash == b0.Breakpoints[1].Hash {
		t.Errorf("agents share the system prompt only: %+v, %+v", a0, b0)
	}
	if a0.Conversation != a1.Conversation || a0.Conversation == b0.Conversation || a0.Tokens != 1500 ||
		a0.Breakpoints[0].TTL != time.Hour || a0.Breakpoints[1].TTL != 5*time.Minute {
		t.Errorf("conversation or sizes: %+v %+v %+v", a0, a1, b0)
	}
	other := cachedTurn("a", 0)
	other.Model = "claude-opus-4-6"
	if inspect(other).Breakpoints[0].Hash == a0.Breakpoints[0].Hash {
		t.Error("two models share a prefix")
	}
	// A turn without structure has none.
	if info, err := p.Inspect(&llmfleet.Request{Body: turnBody(Turn{Agent: "x", Model: "m", InputTokens: 5})}); err != nil || info.Prompt.Cached() {
		t.Errorf("plain turn: %+v %v", info, err)
	}
}

func samePrompt(a, b llmfleet.Prompt) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

// The provider's answers take their usage from its prompt cache: sync
// calls from the sync cache when answered, batch requests from the batch
// cache when they run, in time order with the sync calls.
func TestProviderCache(t *testing.T) {
	c := NewClock(start)
	p := &Provider{Clock: c, Seed: 1, SyncLatency: func(string, *rand.Rand) time.Duration { return 0 },
		Turnaround: func(string, *rand.Rand) time.Duration { return time.Minute },
		Cache:      &cachesim.Config{SyncHitRate: 1, BatchHitRate: 1, CrossRate: 1}}
	cred := llmfleet.Credential{APIKey: "k"}
	advance := func(d time.Duration) { c.AfterFunc(d, func() {}); c.Run() }
	send := func(tn Turn) llmfleet.Usage {
		t.Helper()
		r, err := p.Send(context.Background(), &llmfleet.Request{Credential: cred, Body: turnBody(tn)})
		if err != nil {
			t.Fatal(err)
		}
		var m struct{ Usage llmfleet.Usage }
		if err := json.Unmarshal(r.Body, &m); err != nil || m.Usage != r.Usage {
			t.Fatalf("message usage %+v, response usage %+v: %v", m.Usage, r.Usage, err)
		}
		return r.Usage
	}
	if u := send(cachedTurn("a", 0)); u.CacheCreation.Ephemeral1hInputTokens != 1000 || u.CacheCreation.Ephemeral5mInputTokens != 500 || u.InputTokens != 1 {
		t.Fatalf("first call: %+v", u)
	}
	if u := send(cachedTurn("a", 1)); u.CacheReadInputTokens != 1500 || u.CacheCreation.Ephemeral5mInputTokens != 500 {
		t.Fatalf("second call: %+v", u)
	}
	// A batch of turn 2 runs within its minute; a sync call of turn 3
	// after it (reading across) finds what it wrote.
	b, err := p.CreateBatch(context.Background(), cred, "t", nil, []llmfleet.BatchItem{{CustomID: "r1", Params: turnBody(cachedTurn("a", 2))}})
	if err != nil {
		t.Fatal(err)
	}
	advance(time.Minute)
	var got llmfleet.Usage
	err = p.Results(context.Background(), cred, b.ID, func(r llmfleet.BatchResult) error { got = r.Usage; return nil })
	if err != nil || got.CacheReadInputTokens != 2000 || got.CacheCreation.Ephemeral5mInputTokens != 500 {
		t.Fatalf("batch request: %+v %v", got, err)
	}
	if u := send(cachedTurn("a", 3)); u.CacheReadInputTokens != 2500 {
		t.Fatalf("sync after the batch: %+v", u)
	}
	if p.Calls()["send"] != 3 {
		t.Errorf("calls %v", p.Calls())
	}
}

// A body's prompt is checked as the API checks cache_control.
func TestBodyPromptChecked(t *testing.T) {
	good := cachedTurn("a", 1)
	for name, edit := range map[string]func(*Turn){
		"five breakpoints":    func(t *Turn) { t.Breakpoints = append(t.Breakpoints, t.Breakpoints[0], t.Breakpoints[0]) },
		"1h after 5m":         func(t *Turn) { t.Breakpoints[2].TTL = "1h" },
		"beyond the prompt":   func(t *Turn) { t.Breakpoints[2].Tokens = t.InputTokens + 1 },
		"not growing":         func(t *Turn) { t.Breakpoints[1].Tokens = 1000 },
		"bad ttl":             func(t *Turn) { t.Breakpoints[0].TTL = "10m" },
		"system too long":     func(t *Turn) { t.SystemTokens = t.InputTokens + 1 },
		"sizes do not add":    func(t *Turn) { t.NewTokens++ },
		"cache usage as well": func(t *Turn) { t.CacheReadTokens = 3 },
	} {
		tn := good
		tn.Breakpoints = append([]BreakpointAt(nil), good.Breakpoints...)
		edit(&tn)
		if err := tn.check(); err == nil {
			t.Errorf("%s: turn accepted", name)
		}
		var buf strings.Builder
		WriteWorkload(&buf, []Turn{tn})
		if _, err := ReadWorkload(strings.NewReader(buf.String())); err == nil {
			t.Errorf("%s: workload accepted", name)
		}
	}
	if err := good.check(); err != nil {
		t.Fatal(err)
	}
	if _, err := parseBody(turnBody(good)); err != nil {
		t.Fatal(err)
	}
	bad := []byte(`{"model":"m","id":"x","input_tokens":10,"output_tokens":1,"prompt":{"system":"s","system_tokens":2,"conversation":"c","breakpoints":[{"tokens":11}]}}`)
	if _, err := parseBody(bad); err == nil {
		t.Error("a body's breakpoint beyond its prompt: no error")
	}
}

// FuzzParseBody: any body is answered or refused, never a panic; a body
// read with a prompt has a valid one, which Prompt renders whole.
func FuzzParseBody(f *testing.F) {
	f.Add([]byte(turnBody(cachedTurn("a", 2))))
	f.Add([]byte(bodyOf("m", "x", 1, 2, 3, 4)))
	f.Add([]byte(`{"model":"m","id":"x","input_tokens":10,"output_tokens":1,"prompt":{"system":"s","system_tokens":2,"conversation":"c","breakpoints":[{"tokens":3,"ttl":"1h"},{"tokens":10}]}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		b, err := parseBody(raw)
		if err != nil || b.Prompt == nil {
			return
		}
		if err := b.Prompt.check(b.InputTokens); err != nil {
			t.Fatalf("accepted a bad prompt: %v", err)
		}
		if p := b.Prompt.Prompt(b.Model, b.InputTokens); len(p.Breakpoints) != len(b.Prompt.Breakpoints) || p.Tokens != b.InputTokens {
			t.Fatalf("prompt %+v of %+v", p, b.Prompt)
		}
	})
}

// FuzzReadWorkload: any input is read or refused, never a panic; what is
// read passes its checks and writes back the same.
func FuzzReadWorkload(f *testing.F) {
	var buf bytes.Buffer
	WriteWorkload(&buf, []Turn{cachedTurn("a", 0), cachedTurn("a", 1)})
	f.Add(buf.Bytes())
	f.Add([]byte(`{"agent":"a","model":"m","input_tokens":3,"system":"s","system_tokens":1,"new_tokens":2,"breakpoints":[{"tokens":1}]}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		turns, err := ReadWorkload(bytes.NewReader(raw))
		if err != nil {
			return
		}
		for _, tn := range turns {
			if err := tn.check(); err != nil {
				t.Fatalf("read a bad turn: %v", err)
			}
		}
		var out bytes.Buffer
		if err := WriteWorkload(&out, turns); err != nil {
			t.Fatal(err)
		}
		again, err := ReadWorkload(&out)
		if err != nil || len(again) != len(turns) {
			t.Fatalf("written back: %d turns, %v", len(again), err)
		}
	})
}

// UpgradeTTL raises a batch request's 5-minute breakpoints to an hour,
// and leaves other params as they were.
func TestUpgradeTTL(t *testing.T) {
	p := &Provider{Clock: NewClock(start)}
	tn := cachedTurn("a", 1) // 1h, 5m (default), 5m
	up, n, err := p.UpgradeTTL(turnBody(tn))
	if err != nil || n != 2 {
		t.Fatalf("%d raised, %v", n, err)
	}
	b, err := parseBody(up)
	if err != nil || b.Prompt == nil || b.ID != "a/1" || b.InputTokens != tn.InputTokens || b.OutputTokens != tn.OutputTokens {
		t.Fatalf("upgraded body %s: %+v %v", up, b, err)
	}
	for _, bp := range b.Prompt.Prompt(b.Model, b.InputTokens).Breakpoints {
		if bp.TTL != time.Hour {
			t.Errorf("breakpoint %+v", bp)
		}
	}
	if again, n, err := p.UpgradeTTL(up); err != nil || n != 0 || string(again) != string(up) {
		t.Errorf("upgraded twice: %d %v", n, err)
	}
	plain := turnBody(Turn{Agent: "x", Model: "m", InputTokens: 5})
	if same, n, err := p.UpgradeTTL(plain); err != nil || n != 0 || string(same) != string(plain) {
		t.Errorf("plain body: %s %d %v", same, n, err)
	}
}
