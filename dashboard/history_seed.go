package dashboard

import (
	"time"

	"github.com/llmfleet/llmfleet/ledger"
)

// Span is how far back the savings and traffic series reach: the width
// of a bucket times the buckets kept.
func (h *History) Span() time.Duration {
	return h.bucketWidth() * time.Duration(h.points())
}

// AddBefore counts the money of s, a summary of the ledger before the
// entries given to Add (a restarted process seeding its history from its
// store), into the sums the savings series starts from.
func (h *History) AddBefore(s ledger.Summary) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.base.add(money{cost: s.CostUSD, syncEq: s.SyncEquivalentUSD, miss: s.RoutingMissUSD, notInSaving: s.SavedUSD - s.NetSavedUSD})
}
