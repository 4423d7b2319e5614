package claudewire

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// turnBody is an agent's turn n: a cached system prompt, then n
// exchanges, the last user message carrying the breakpoint, as Claude
// Code sends them.
func turnBody(n int, ttl string) []byte {
	cc := `{"type":"ephemeral"}`
	if ttl != "" {
		cc = `{"type":"ephemeral","ttl":"` + ttl + `"}`
	}
	var msgs []string
	for i := 0; i <= n; i++ {
		user := `{"type":"text","text":"question ` + string(rune('a'+i)) + `"}`
		if i == n {
			user = `{"type":"text","text":"question ` + string(rune('a'+i)) + `","cache_control":` + cc + `}`
		}
		msgs = append(msgs, `{"role":"user","content":[`+user+`]}`)
		if i < n {
			msgs = append(msgs, `{"role":"assistant","content":"answer `+string(rune('a'+i))+`"}`)
		}
	}
	return []byte(`{"model":"claude-sonnet-4-6","max_tokens":64,` +
		`"system":[{"type":"text","text":"You are a coding agent.","cache_control":{"type":"ephemeral","ttl":"1h"}}],` +
		`"messages":[` + strings.Join(msgs, ",") + `]}`)
}

// The breakpoints of successive turns of one conversation: the system
// prompt's prefix is the same in every turn; turn n+1's prefixes extend
// turn n's, and the prefix turn n cached (its last breakpoint) is named
// alike in turn n+1, where that block no longer carries cache_control.
func TestPromptOfTurns(t *testing.T) {
	p1, err := PromptOf(turnBody(1, ""))
	if err != nil {
		t.Fatal(err)
	}
	p2, err := PromptOf(turnBody(2, ""))
	if err != nil {
		t.Fatal(err)
	}
	if len(p1.Breakpoints) != 2 || len(p2.Breakpoints) != 2 {
		t.Fatalf("breakpoints %d and %d, want 2 each", len(p1.Breakpoints), len(p2.Breakpoints))
	}
	if p1.Breakpoints[0].Hash != p2.Breakpoints[0].Hash || p1.Breakpoints[0].TTL != time.Hour {
		t.Errorf("system prefix %+v vs %+v", p1.Breakpoints[0], p2.Breakpoints[0])
	}
	if p1.Breakpoints[1].TTL != 5*time.Minute || p2.Breakpoints[1].Bytes <= p1.Breakpoints[1].Bytes {
		t.Errorf("conversation prefixes %+v, %+v", p1.Breakpoints[1], p2.Breakpoints[1])
	}
	if p1.Conversation == "" || p1.Conversation != p2.Conversation {
		t.Errorf("conversations %q and %q, want one", p1.Conversation, p2.Conversation)
	}
	other, _ := PromptOf([]byte(strings.Replace(string(turnBody(1, "")), "question a", "question z", 1)))
	if other.Conversation == p1.Conversation || other.Breakpoints[1].Hash == p1.Breakpoints[1].Hash {
		t.Errorf("another conversation shares %q", other.Conversation)
	}
}

// The prefix turn n cached is among the earlier prefixes of turn n+1's
// last breakpoint, where its block no longer carries cache_control (the
// lookup finds it there), and it is named alike there.
func TestPromptOfEarlierPrefixes(t *testing.T) {
	p1, _ := PromptOf(turnBody(1, ""))
	p2, _ := PromptOf(turnBody(2, ""))
	last := p2.Breakpoints[len(p2.Breakpoints)-1]
	found := false
	for _, e := range last.Earlier {
		if e.Hash == p1.Breakpoints[1].Hash && e.Bytes < last.Bytes {
			found = true
		}
	}
	if !found || len(last.Earlier) == 0 || last.Earlier[0].Bytes >= last.Bytes {
		t.Fatalf("turn 2's earlier prefixes %+v lack turn 1's %s", last.Earlier, p1.Breakpoints[1].Hash)
	}
}

// The prefix of turn n is found again in turn n+1, without its
// cache_control: the prefix hash of turn n's breakpoint is the hash of
// the same blocks in turn n+1.
func TestPromptOfPrefixAcrossTurns(t *testing.T) {
	p1, _ := PromptOf(turnBody(1, ""))
	// Turn 2 with an extra breakpoint where turn 1 had its own.
	body := strings.Replace(string(turnBody(2, "")), `"question b"}`, `"question b","cache_control":{"type":"ephemeral"}}`, 1)
	p2, err := PromptOf([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if len(p2.Breakpoints) != 3 || p2.Breakpoints[1].Hash != p1.Breakpoints[1].Hash {
		t.Fatalf("turn 2 %+v, turn 1 %+v: want turn 1's prefix among turn 2's", p2.Breakpoints, p1.Breakpoints)
	}
}

func TestPromptOfTopLevelCacheControl(t *testing.T) {
	p, err := PromptOf([]byte(`{"model":"m","cache_control":{"type":"ephemeral","ttl":"1h"},"system":"be brief","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil || len(p.Breakpoints) != 1 || p.Breakpoints[0].TTL != time.Hour || p.Breakpoints[0].Bytes != p.Bytes {
		t.Fatalf("%+v %v", p, err)
	}
	if p, _ := PromptOf([]byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`)); len(p.Breakpoints) != 0 || p.Cached() {
		t.Fatalf("no cache_control: %+v", p)
	}
}

func TestUpgradeTTL(t *testing.T) {
	body := turnBody(1, "5m")
	up, n, err := UpgradeTTL(body)
	if err != nil || n != 1 {
		t.Fatalf("upgraded %d, %v; want the one 5m breakpoint", n, err)
	}
	if !json.Valid(up) || strings.Contains(string(up), `"5m"`) || strings.Count(string(up), `"ttl":"1h"`) != 2 {
		t.Fatalf("upgraded body %s", up)
	}
	p, _ := PromptOf(up)
	q, _ := PromptOf(body)
	for i := range p.Breakpoints {
		if p.Breakpoints[i].TTL != time.Hour || p.Breakpoints[i].Hash != q.Breakpoints[i].Hash {
			t.Errorf("breakpoint %d: %+v (was %+v)", i, p.Breakpoints[i], q.Breakpoints[i])
		}
	}
	// Nothing to raise: the body itself.
	if same, n, err := UpgradeTTL(up); err != nil || n != 0 || string(same) != string(up) {
		t.Fatalf("second upgrade: %d %v", n, err)
	}
	top, n, _ := UpgradeTTL([]byte(`{"model":"m", "cache_control": {"type":"ephemeral"}, "messages":[]}`))
	if n != 1 || string(top) != `{"model":"m", "cache_control": {"type":"ephemeral","ttl":"1h"}, "messages":[]}` {
		t.Fatalf("top level: %d %s", n, top)
	}
}

func FuzzPromptOf(f *testing.F) {
	f.Add(turnBody(2, ""))
	f.Add([]byte(`{"model":"m","cache_control":{"type":"ephemeral"},"tools":[{"name":"t","cache_control":{"type":"ephemeral","ttl":"1h"}}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		p, err := PromptOf(body)
		if err != nil {
			return
		}
		var last int64
		for _, b := range p.Breakpoints {
			if b.Bytes < last || b.Bytes > p.Bytes || (b.TTL != 5*time.Minute && b.TTL != time.Hour) {
				t.Fatalf("breakpoints %+v of a %d-byte prompt", p.Breakpoints, p.Bytes)
			}
			last = b.Bytes
		}
		if up, _, err := UpgradeTTL(body); err == nil && !json.Valid(up) {
			t.Fatalf("upgraded body is not JSON: %s", up)
		}
	})
}
