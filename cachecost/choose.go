package cachecost

import "github.com/llmfleet/llmfleet"

// DefaultMargin is the share by which a route of the other cache must
// beat the conversation's own to move it there (see Choose).
const DefaultMargin = 0.1

// Choose returns the estimate to route by: the cheapest of sync and
// options by their bill and look-ahead (USD + Ahead), never one expected
// to cost more than sync for the turn itself; with hysteresis:
// while a conversation's last turn used one cache (current: RouteSync
// for the sync and flex routes, RouteBatch for the batch route; empty
// for a new conversation), an option of the other cache must be cheaper
// than the best of the current one by margin (a share of it) to be
// chosen, for a turn moved to the other cache leaves the entries of its
// earlier turns behind.
func Choose(current llmfleet.Route, margin float64, sync Estimate, options ...Estimate) Estimate {
	var stay, move *Estimate // the cheapest of the current cache's routes, and of the other's
	for _, c := range append([]Estimate{sync}, options...) {
		if c.USD > sync.USD {
			continue // never more than sync
		}
		if current == "" || classOf(c.Route) == current {
			if stay == nil || c.total() < stay.total() {
				stay = &c
			}
		} else if move == nil || c.total() < move.total() {
			move = &c
		}
	}
	if stay == nil || move != nil && move.total() < stay.total()*(1-margin) {
		return *move
	}
	return *stay
}

// classOf returns the cache a route's lookups use: the sync cache for
// the sync and flex routes, the batch cache for the batch route.
func classOf(r llmfleet.Route) llmfleet.Route {
	if r == llmfleet.RouteBatch {
		return llmfleet.RouteBatch
	}
	return llmfleet.RouteSync
}

// ClassOf is classOf, for the engine: the cache (RouteSync or
// RouteBatch) a route's lookups use.
func ClassOf(r llmfleet.Route) llmfleet.Route { return classOf(r) }

// total is what Choose compares: the turn's bill and its look-ahead.
func (e Estimate) total() float64 { return e.USD + e.Ahead }

// Explore returns batch, an estimate of the batch route, in place of
// choice when the batch cache's rate is not measured yet (measuring is
// set) and batch costs at most margin more than choice, this turn and
// the turns it leads to: a few cheap trials, which measure the rate
// that nothing would measure otherwise (a batch cache that no turn reads
// is never measured), rather than a rate assumed forever. Never a batch
// expected to cost more than sync this turn.
func Explore(choice, sync, batch Estimate, measuring bool, margin float64) Estimate {
	if !measuring || choice.Route == llmfleet.RouteBatch || batch.USD > sync.USD ||
		batch.total() > choice.total()*(1+margin) {
		return choice
	}
	return batch
}
