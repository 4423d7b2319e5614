package main

import (
	"math/rand/v2"
	"testing"
	"time"
)

func TestParseTurnarounds(t *testing.T) {
	f, err := parseTurnarounds("2s-6s, claude-opus-4-6=30s-90s,claude-haiku-4-5=1s")
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 100 {
		if d := f("claude-sonnet-4-6", r); d < 2*time.Second || d > 6*time.Second {
			t.Fatalf("default model: %s", d)
		}
		if d := f("claude-opus-4-6", r); d < 30*time.Second || d > 90*time.Second {
			t.Fatalf("opus: %s", d)
		}
		if d := f("claude-haiku-4-5", r); d != time.Second {
			t.Fatalf("haiku: %s", d)
		}
	}
	if f, err := parseTurnarounds("claude-opus-4-6=1m"); err != nil || f("other", r) < 2*time.Second || f("claude-opus-4-6", r) != time.Minute {
		t.Fatalf("a pair alone keeps the default for other models: %v", err)
	}
	for _, bad := range []string{"", "soon", "6s-2s", "2s,3s", "=3s", "m=", "2s,m=x"} {
		if _, err := parseTurnarounds(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestParseLatenciesAndStragglers(t *testing.T) {
	f, err := parseLatencies("claude-opus-4-6=1s-2s")
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	if d := f("claude-sonnet-4-6", r); d != 0 {
		t.Errorf("unnamed model: %s, want 0", d)
	}
	if d := f("claude-opus-4-6", r); d < time.Second || d > 2*time.Second {
		t.Errorf("opus: %s", d)
	}
	if f, err := parseLatencies("30ms"); err != nil || f("m", r) != 30*time.Millisecond {
		t.Errorf("fixed latency: %v", err)
	}
	fixed := func(string, *rand.Rand) time.Duration { return time.Second }
	slow := withStragglers(fixed, 0.25, 10)
	n := 0
	for range 4000 {
		switch d := slow("m", r); d {
		case 10 * time.Second:
			n++
		case time.Second:
		default:
			t.Fatalf("straggler draw %s", d)
		}
	}
	if n < 800 || n > 1200 {
		t.Errorf("%d of 4000 stragglers, want about 1000", n)
	}
}
