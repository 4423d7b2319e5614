package serve

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/llmfleet/llmfleet"
)

// startupLine prints the line telling where "llmfleet serve" listens and
// where its two faces go: text, or with --log-format json a JSON line
// whose msg is the same and whose attributes are addr, upstream (the
// Anthropic API's base URL) and openai_upstream (the OpenAI API's, or
// "closed" when proxy-held keys hold no OpenAI key), so that both forms
// can be parsed.
func startupLine(w io.Writer, asJSON bool, addr, upstream, openaiUpstream string) {
	if !asJSON {
		fmt.Fprintf(w, "llmfleet serving on %s (upstream %s; OpenAI face %s/openai/v1, upstream %s)\n", addr, upstream, addr, openaiUpstream)
		return
	}
	slog.New(slog.NewJSONHandler(w, nil)).Info("llmfleet serving on "+addr, "addr", addr, "upstream", upstream, "openai_upstream", openaiUpstream)
}

// statsAttr is the group "stats" of the shutdown line: the dispatcher's
// counters, but for sync_calls, which is the ledger's count of sync calls
// (ledgerSync), as the "cost ledger" line and /llmfleet/v1/stats give it.
// The dispatcher's own count is not that: it counts the sync call of a
// rescued or at-once-sync batched request, whose answer the access log
// also saw as route sync (counted twice), and a rescue whose answer came
// late (the ledger counts the request once, by the answer it got); the
// access log's count of the proxy's sync route missed the Gemini face.
func statsAttr(s llmfleet.Stats, ledgerSync int64) slog.Attr {
	return slog.Group("stats",
		slog.Int64("sync_calls", ledgerSync),
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
