package ledger

import (
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
)

// Budget misses are labelled by what happened; errors are not misses.
func TestMissLabel(t *testing.T) {
	b := 100 * time.Millisecond
	for _, tc := range []struct {
		e    llmfleet.LedgerEntry
		want string
	}{
		{llmfleet.LedgerEntry{Outcome: "ok", Budget: b, Latency: 30 * time.Second}, "answered late"},
		{llmfleet.LedgerEntry{Outcome: "timeout_error", Budget: b, Latency: b}, "timed out"},
		{llmfleet.LedgerEntry{Outcome: "deadline_exceeded", Budget: b, Latency: b}, "timed out"},
		{llmfleet.LedgerEntry{Outcome: "overloaded_error", Budget: b, Latency: time.Second}, ""},
		{llmfleet.LedgerEntry{Outcome: "api_error", Budget: b, Latency: time.Millisecond}, ""},
		{llmfleet.LedgerEntry{Outcome: "ok", Budget: b, Latency: time.Millisecond, BudgetMet: true}, ""},
		{llmfleet.LedgerEntry{Outcome: "ok", Latency: time.Hour}, ""},
	} {
		if got := MissLabel(tc.e); got != tc.want {
			t.Errorf("%s after %v (budget %v): %q, want %q", tc.e.Outcome, tc.e.Latency, tc.e.Budget, got, tc.want)
		}
		if IsBudgetMiss(tc.e) != (tc.want != "") {
			t.Errorf("%s after %v: IsBudgetMiss %v", tc.e.Outcome, tc.e.Latency, IsBudgetMiss(tc.e))
		}
	}
	s := Summarize([]llmfleet.LedgerEntry{
		{Outcome: "overloaded_error", Budget: b, Latency: time.Second},
		{Outcome: "timeout_error", Budget: b, Latency: b},
	}, time.Time{}, time.Time{})
	if s.BudgetMisses != 1 || s.Errors != 2 || len(s.RecentBudgetMisses) != 1 {
		t.Fatalf("misses %d errors %d recent %d, want 1, 2, 1", s.BudgetMisses, s.Errors, len(s.RecentBudgetMisses))
	}
}
