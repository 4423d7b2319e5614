package observe

import (
	"context"
	"time"

	"github.com/llmfleet/llmfleet/ledger"
)

// seedTimeout bounds the reading of the ledger that seeds the dashboard's
// history at start.
const seedTimeout = time.Minute

// seedHistory fills the dashboard's history, at start, from the ledger in
// the store: the entries of its span one by one (traffic, savings,
// turnarounds), and what came before summed, so that the savings chart
// of a restarted process goes on from where it was. Entries observed from now on are counted as they come, and were
// not in the store yet: none is counted twice. A read that fails leaves
// the history empty, with a warning.
func (p *Pipeline) seedHistory() {
	ctx, cancel := context.WithTimeout(context.Background(), seedTimeout)
	defer cancel()
	now := p.clock.Now()
	from := now.Add(-p.history.Span())
	var whole fleetTotals
	all, err := whole.summary(ctx, p.cfg.Store, time.Time{}, now)
	if err != nil {
		p.log.Warn("the dashboard's history starts empty: reading the ledger failed", "err", err)
		return
	}
	recent, err := readLedger(ctx, p.cfg.Store, from, now.Add(time.Hour))
	if err != nil {
		p.log.Warn("the dashboard's history starts empty: reading the ledger failed", "err", err)
		return
	}
	w := ledger.Summarize(recent, from, now)
	p.history.AddBefore(ledger.Summary{CostUSD: all.CostUSD - w.CostUSD, SyncEquivalentUSD: all.SyncEquivalentUSD - w.SyncEquivalentUSD,
		SavedUSD: all.SavedUSD - w.SavedUSD, RoutingMissUSD: all.RoutingMissUSD - w.RoutingMissUSD, NetSavedUSD: all.NetSavedUSD - w.NetSavedUSD})
	for _, e := range recent { // priced when they were stored
		p.history.Add(e)
	}
}
