package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
)

// sample returns a turnaround sample of a provider and model, numbered i:
// its batch ended at base+i min and i ns, and took 3 min and i ns.
func sample(provider, model string, i int) llmfleet.TurnaroundSample {
	return llmfleet.TurnaroundSample{
		Provider:   provider,
		Model:      model,
		Size:       10 + i,
		Turnaround: 3*time.Minute + time.Duration(i),
		At:         base.Add(time.Duration(i)*time.Minute + time.Duration(i)),
	}
}

func checkSamples(t *testing.T, what string, got, want []llmfleet.TurnaroundSample) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d samples, want %d:\n got %v\nwant %v", what, len(got), len(want), got, want)
	}
	for i := range want {
		g, w := got[i], want[i]
		if !g.At.Equal(w.At) {
			t.Errorf("%s: sample %d: At %v, want %v", what, i, g.At, w.At)
		}
		g.At, w.At = time.Time{}, time.Time{}
		if g != w {
			t.Errorf("%s: sample %d:\n got %+v\nwant %+v", what, i, g, w)
		}
	}
}

func (s *suite) turnarounds(t *testing.T, st llmfleet.Store, n int) []llmfleet.TurnaroundSample {
	t.Helper()
	got, err := st.Turnarounds(ctx(t), n)
	if err != nil {
		t.Fatalf("Turnarounds(%d): %v", n, err)
	}
	return got
}

// turnaroundsRoundTrip: a sample comes back field for field, its times to
// the nanosecond; nothing is stored by an empty call, and n <= 0 returns
// none.
func (s *suite) turnaroundsRoundTrip(t *testing.T) {
	st := s.store(t)
	if got := s.turnarounds(t, st, 10); len(got) != 0 {
		t.Errorf("Turnarounds of an empty store: %v", got)
	}
	if err := st.AddTurnarounds(ctx(t), nil); err != nil {
		t.Errorf("AddTurnarounds(nil): %v", err)
	}
	in := []llmfleet.TurnaroundSample{
		sample("anthropic", "claude-sonnet-4-6", 1),
		// Odd but possible: a provider's clocks put ended_at before
		// created_at, a batch of one.
		{Provider: "anthropic", Model: "claude-haiku-4-5", Size: 1, Turnaround: -time.Nanosecond,
			At: time.Date(2026, 1, 2, 3, 4, 5, 999999999, time.FixedZone("UTC-7", -7*3600))},
	}
	want := []llmfleet.TurnaroundSample{in[1], in[0]}
	if err := st.AddTurnarounds(ctx(t), in); err != nil {
		t.Fatal(err)
	}
	// The store keeps copies: changing what was passed changes nothing.
	in[0].Size, in[1].At = 99, base
	got := s.turnarounds(t, st, 10)
	checkSamples(t, "Turnarounds", got, want)
	got[0].Size = 42
	checkSamples(t, "Turnarounds after changing what it returned", s.turnarounds(t, st, 10), want)
	for _, n := range []int{0, -1} {
		if got := s.turnarounds(t, st, n); len(got) != 0 {
			t.Errorf("Turnarounds(%d) = %v, want none", n, got)
		}
	}
}

// turnaroundsLatest: the latest n of each provider and model, oldest
// first, by provider and model, whatever order they were added in.
func (s *suite) turnaroundsLatest(t *testing.T) {
	st := s.store(t)
	type key struct{ provider, model string }
	// Keys in the order Turnarounds returns them; the provider and model
	// strings are such that a store comparing "provider/model" or
	// "provider"+"model" joined gets the order wrong.
	keys := []key{
		{"anthropic", "claude-haiku-4-5"},
		{"anthropic", "claude-sonnet-4-6"},
		{"anthropic-", "a"},
		{"anthropicclaude", "-haiku"},
		{"openai", "gpt-5"},
	}
	// How many samples each has: fewer than n, exactly n, more than n.
	counts := []int{2, 3, 7, 1, 5}
	var all [][]llmfleet.TurnaroundSample
	for k, key := range keys {
		var ss []llmfleet.TurnaroundSample
		for i := range counts[k] {
			ss = append(ss, sample(key.provider, key.model, 10*i+k))
		}
		all = append(all, ss)
	}
	// Two samples of anthropic/claude-sonnet-4-6, added together after
	// the others, end at the same time as its latest one: of the three,
	// the one added last is the latest, then the one added with it.
	tie := all[1][2]
	tie1, tie2 := tie, tie
	tie1.Size, tie2.Size = 1001, 1002
	all[1] = append(all[1], tie1, tie2)

	// Added latest first, interleaved across keys, in several calls.
	var calls [][]llmfleet.TurnaroundSample
	for i := 9; i >= 0; i-- {
		var call []llmfleet.TurnaroundSample
		for k := range all {
			if i < len(all[k]) && !(k == 1 && i >= 3) {
				call = append(call, all[k][i])
			}
		}
		if len(call) > 0 {
			calls = append(calls, call)
		}
	}
	calls = append(calls, []llmfleet.TurnaroundSample{tie1, tie2})
	for _, call := range calls {
		if err := st.AddTurnarounds(ctx(t), call); err != nil {
			t.Fatal(err)
		}
	}

	for _, n := range []int{1, 3, 100} {
		var want []llmfleet.TurnaroundSample
		for k := range all {
			ss := all[k]
			if k == 1 {
				// Oldest first, the tied ones in the order added.
				ss = []llmfleet.TurnaroundSample{all[1][0], all[1][1], all[1][2], tie1, tie2}
			}
			want = append(want, ss[max(0, len(ss)-n):]...)
		}
		checkSamples(t, fmt.Sprintf("Turnarounds(%d)", n), s.turnarounds(t, st, n), want)
	}
}

// turnaroundsReopen: samples survive closing and reopening the store.
func (s *suite) turnaroundsReopen(t *testing.T) {
	if s.h.Reopen == nil {
		t.Skip("Harness.Reopen is nil")
	}
	st := s.store(t)
	want := []llmfleet.TurnaroundSample{sample("anthropic", "claude-sonnet-4-6", 1), sample("anthropic", "claude-sonnet-4-6", 2)}
	if err := st.AddTurnarounds(ctx(t), want); err != nil {
		t.Fatal(err)
	}
	st = s.reopened(t, st)
	checkSamples(t, "Turnarounds after reopen", s.turnarounds(t, st, 10), want)
	more := sample("anthropic", "claude-sonnet-4-6", 3)
	if err := st.AddTurnarounds(ctx(t), []llmfleet.TurnaroundSample{more}); err != nil {
		t.Fatal(err)
	}
	st = s.reopened(t, st)
	checkSamples(t, "Turnarounds after a second reopen", s.turnarounds(t, st, 2),
		[]llmfleet.TurnaroundSample{want[1], more})
}

// turnaroundsPurge: Purge deletes the samples that ended before the
// ledger cut, counting them, and keeps them past the results cut.
func (s *suite) turnaroundsPurge(t *testing.T) {
	st := s.store(t)
	c := ctx(t)
	cut := base.Add(-29 * 24 * time.Hour)
	at := func(ss llmfleet.TurnaroundSample, when time.Time) llmfleet.TurnaroundSample {
		ss.At = when
		return ss
	}
	oldest := at(sample("anthropic", "claude-sonnet-4-6", 1), cut.Add(-40*24*time.Hour))
	old := at(sample("anthropic", "claude-sonnet-4-6", 2), cut.Add(-time.Nanosecond))
	onCut := at(sample("anthropic", "claude-sonnet-4-6", 3), cut)
	recent := at(sample("anthropic", "claude-sonnet-4-6", 4), base)
	// The only sample of another model, old: its model goes with it.
	other := at(sample("openai", "gpt-5", 5), cut.Add(-time.Hour))
	if err := st.AddTurnarounds(c, []llmfleet.TurnaroundSample{recent, old, other, onCut, oldest}); err != nil {
		t.Fatal(err)
	}
	// A results cut later than every sample deletes none: samples are
	// kept as long as the ledger.
	n, err := st.Purge(c, base.Add(time.Hour), cut.Add(-50*24*time.Hour))
	if err != nil || n != 0 {
		t.Errorf("Purge with only a results cut = %d, %v; want 0", n, err)
	}
	checkSamples(t, "Turnarounds after a results-only purge", s.turnarounds(t, st, 10),
		[]llmfleet.TurnaroundSample{oldest, old, onCut, recent, other})
	n, err = st.Purge(c, cut, cut)
	if err != nil || n != 3 {
		t.Errorf("Purge = %d, %v; want the 3 samples that ended before the ledger cut", n, err)
	}
	checkSamples(t, "Turnarounds after Purge", s.turnarounds(t, st, 10), []llmfleet.TurnaroundSample{onCut, recent})
	if n, err := st.Purge(c, cut, cut); n != 0 || err != nil {
		t.Errorf("second Purge = %d, %v; want 0", n, err)
	}
}
