package dispatch

import (
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/cachecost"
)

// openParts makes the batch side's components, once the policy, clock,
// logger and context are set.
func (d *Dispatcher) openParts() {
	d.pools = &poolSet{d: d, m: map[string]*pool{}}
	d.creates = &creator{d: d, creating: map[string]bool{}}
	d.reconciler = &reconciler{d: d}
	d.trackers = &trackerSet{d: d, m: map[string]*tracker{}, knownIDs: map[string]bool{}}
	d.lease = &leaseHolder{clock: d.clock}
	d.fleet = &fleet{d: d}
	d.recovery = &adopter{d: d}
	d.flexer = &flexExec{pol: d.pol, clock: d.clock, log: d.log, syncLat: d.syncLat, tier: d.flex,
		closing: d.ctx, fallbacks: &d.stats.flexFallbacks}
	sleep := func(wait time.Duration) bool { return llmfleet.Sleep(d.ctx, d.clock, wait) == nil }
	d.cache = &cacheModel{d: d,
		book:   &cachecost.Book{Priors: cachecost.Rates{Sync: cachecost.Priors.Sync, Batch: d.pol.CacheBatchRate, Cross: cachecost.Priors.Cross}},
		writes: &cacheLog{store: d.Store, run: d.work.run, sleep: sleep, log: d.log}}
	d.router = &router{pol: d.pol, clock: d.clock, log: d.log, predictor: d.predictor, syncLat: d.syncLat,
		flex: d.flex, hasFlex: d.Flex, prices: d.Prices, cache: d.cache, fingerprint: d.fingerprint,
		providers: d.Providers, flights: d.trackers}
}
