package emulator

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

type usage struct {
	InputTokens              int64 `json:"input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	CacheCreation            struct {
		Ephemeral5m int64 `json:"ephemeral_5m_input_tokens"`
		Ephemeral1h int64 `json:"ephemeral_1h_input_tokens"`
	} `json:"cache_creation"`
	OutputTokens int64  `json:"output_tokens"`
	ServiceTier  string `json:"service_tier"`
}

func (e *env) usage(body any, hdr ...string) usage {
	e.t.Helper()
	r := e.do("POST", "/v1/messages", body, hdr...)
	if r.status != 200 {
		e.t.Fatalf("%d %s", r.status, r.body)
	}
	var m struct{ Usage usage }
	json.Unmarshal(r.body, &m)
	return m.Usage
}

// tok is the token count of one block as the emulator counts it.
func tok(t *testing.T, v any) int64 { return int64(len(mustJSON(t, v))+3) / 4 }

func TestPromptCaching(t *testing.T) {
	e := newEnv(t)
	sys := cached(strings.Repeat("system prompt ", 100), "1h")
	m1 := cached(strings.Repeat("document ", 50))
	tail := map[string]any{"type": "text", "text": "question?"}
	body := msgBody("", "system", []any{sys}, "messages", []any{
		map[string]any{"role": "user", "content": []any{m1, tail}},
	})
	S, M, T := tok(t, sys), tok(t, m1), tok(t, tail)
	check := func(name string, u usage, input, read, w5, w1 int64) {
		t.Helper()
		if u.InputTokens != input || u.CacheReadInputTokens != read || u.CacheCreation.Ephemeral5m != w5 ||
			u.CacheCreation.Ephemeral1h != w1 || u.CacheCreationInputTokens != w5+w1 {
			t.Fatalf("%s: usage %+v, want input %d read %d 5m %d 1h %d", name, u, input, read, w5, w1)
		}
	}
	check("first", e.usage(body), T, 0, M, S)
	check("again", e.usage(body), T, S+M, 0, 0)
	check("other key", e.usage(body, "X-Api-Key", "key-b"), T, 0, M, S)
	e.clock.Advance(10 * time.Minute) // the 5m entry lapses, the 1h one lives
	check("after 10m", e.usage(body), T, S, M, 0)

	// A longer conversation finds the earlier breakpoint by looking back.
	reply := map[string]any{"role": "assistant", "content": "ok"}
	next := cached("follow-up")
	body2 := msgBody("", "system", []any{sys}, "messages", []any{
		map[string]any{"role": "user", "content": []any{m1, tail}}, reply,
		map[string]any{"role": "user", "content": []any{next}},
	})
	check("follow-up", e.usage(body2), 1, S+M, T+tok(t, "ok")+tok(t, next), 0)

	// Automatic caching: a top-level cache_control marks the last block.
	auto := msgBody("automatic caching "+strings.Repeat("z", 100), "cache_control", map[string]any{"type": "ephemeral"})
	A := tok(t, "automatic caching "+strings.Repeat("z", 100))
	check("auto first", e.usage(auto), 1, 0, A, 0)
	check("auto again", e.usage(auto), 1, A, 0, 0)

	// No cache_control: everything is input.
	plain := msgBody("plain")
	check("plain", e.usage(plain), tok(t, "plain"), 0, 0, 0)

	// 1h after 5m is refused.
	errType(t, e.do("POST", "/v1/messages", msgBody("", "system", []any{cached("a", "5m"), cached("b", "1h")})), 400, "invalid_request_error")
}

func TestCacheMinTokens(t *testing.T) {
	e := newEnv(t)
	e.s.CacheMinTokens = 1024
	small := msgBody("q", "system", []any{cached("short")})
	for range 2 {
		if u := e.usage(small); u.CacheReadInputTokens != 0 || u.CacheCreationInputTokens != 0 {
			t.Fatalf("short prefix cached: %+v", u)
		}
	}
	big := msgBody("q", "system", []any{cached(strings.Repeat("x", 8000))})
	if u := e.usage(big); u.CacheCreationInputTokens == 0 {
		t.Fatalf("long prefix not cached: %+v", u)
	}
}

func TestBatchCaching(t *testing.T) {
	e := newEnv(t)
	sys := cached(strings.Repeat("shared context ", 200), "1h")
	var its []item
	for i := range 5 {
		its = append(its, item{fmt.Sprintf("r%d", i), msgBody(fmt.Sprintf("q%d", i), "system", []any{sys})})
	}
	b := e.create(its)
	e.clock.Advance(time.Minute)
	var writes, reads int64
	for _, l := range e.results(b["id"].(string)) {
		var m struct{ Usage usage }
		json.Unmarshal(l.Result.Message, &m)
		if m.Usage.ServiceTier != "batch" {
			t.Fatalf("service tier %q", m.Usage.ServiceTier)
		}
		writes += m.Usage.CacheCreation.Ephemeral1h
		reads += m.Usage.CacheReadInputTokens
	}
	S := tok(t, sys)
	if writes != S || reads != 4*S {
		t.Fatalf("writes %d reads %d, want %d and %d", writes, reads, S, 4*S)
	}
	// A later sync request with the same prefix does not read it: the
	// sync and batch caches are apart (cachesim.Default's CrossRate 0).
	if u := e.usage(msgBody("sync", "system", []any{sys})); u.CacheReadInputTokens != 0 || u.CacheCreation.Ephemeral1h != S {
		t.Fatalf("sync after batch %+v", u)
	}
}

func TestInputTokens(t *testing.T) {
	e := newEnv(t)
	body := mustJSON(t, msgBody("count me", "system", "be brief"))
	n, err := InputTokens(body)
	if err != nil || n != tok(t, "count me")+tok(t, "be brief") {
		t.Fatalf("InputTokens %d %v", n, err)
	}
	if u := e.usage(body); u.InputTokens != n {
		t.Fatalf("usage %+v, want %d", u, n)
	}
	ct := map[string]any{"model": "claude-sonnet-4-6", "messages": []any{map[string]any{"role": "user", "content": "count me"}}, "system": "be brief"}
	r := e.do("POST", "/v1/messages/count_tokens", ct)
	if r.status != 200 || r.json(t)["input_tokens"].(float64) != float64(n) {
		t.Fatalf("count_tokens %d %s", r.status, r.body)
	}
}
