package main

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/llmfleet/llmfleet"
)

// startupLine prints the line telling where "llmfleet serve" listens: text
// ("llmfleet serving on <url> (upstream <url>)"), or in JSON mode one JSON
// object with the message "llmfleet serving on <url>" and the members
// addr and upstream.
func startupLine(w io.Writer, asJSON bool, addr, upstream string) {
	if !asJSON {
		fmt.Fprintf(w, "llmfleet serving on %s (upstream %s)\n", addr, upstream)
		return
	}
	slog.New(slog.NewJSONHandler(w, nil)).Info("llmfleet serving on "+addr, "addr", addr, "upstream", upstream)
}

// statsAttr is the group "stats" of the shutdown line: the dispatcher's
// counters, its sync calls counting those of the proxy's sync route
// (proxySync), which go upstream without it.
func statsAttr(s llmfleet.Stats, proxySync int64) slog.Attr {
	return slog.Group("stats",
		slog.Int64("sync_calls", s.SyncCalls+proxySync),
		slog.Int64("batched_calls", s.BatchedCalls),
		slog.Int64("batches_submitted", s.BatchesSubmitted),
		slog.Int64("batches_ended", s.BatchesEnded),
		slog.Int64("errors", s.Errors),
		slog.Int64("queue_depth", s.QueueDepth),
		slog.Int64("batches_in_flight", s.BatchesInFlight),
		slog.Int64("management_calls", s.ManagementCalls),
		slog.Int64("dropped_results", s.DroppedResults),
		slog.Int64("budget_misses", s.BudgetMisses),
	)
}
