package ledger

import (
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
)

func TestSummarizeCountsDistinctBatches(t *testing.T) {
	at := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	es := []llmfleet.LedgerEntry{
		{Time: at, Route: llmfleet.RouteBatch, BatchID: "msgbatch_a", Outcome: "ok"},
		{Time: at, Route: llmfleet.RouteBatch, BatchID: "msgbatch_a", Outcome: "ok"},
		{Time: at, Route: llmfleet.RouteBatch, BatchID: "msgbatch_b", Outcome: "ok"},
		{Time: at, Route: llmfleet.RouteSync, Outcome: "ok"},
		{Time: at.Add(-48 * time.Hour), Route: llmfleet.RouteBatch, BatchID: "msgbatch_old", Outcome: "ok"},
	}
	s := Summarize(es, at.Add(-time.Hour), at.Add(time.Hour))
	if s.BatchesSubmitted != 2 || s.BatchedCalls != 3 || s.SyncCalls != 1 {
		t.Fatalf("batches %d, batched %d, sync %d; want 2, 3, 1", s.BatchesSubmitted, s.BatchedCalls, s.SyncCalls)
	}
}
