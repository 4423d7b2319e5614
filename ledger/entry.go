package ledger

import (
	"time"

	"github.com/llmfleet/llmfleet"
)

// PriceFunc returns the cost in USD of usage u of a model at route, and
// whether the model is priced at all. The Cost method of a pricing.Table
// fits.
type PriceFunc func(provider, model string, u llmfleet.Usage, route llmfleet.Route) (usd float64, priced bool)

// Make returns e with its costs filled in by price: CostUSD at the tier
// the request was served in (e.PricedTier(): the provider's word, else
// the route's), OtherRouteUSD at the other side, and Priced. The other
// side of an entry served at a discount (flex or batch) is the standard
// price, what it would have cost sync; that of one served at the standard
// price is the discount it could have had: flex for a flex call the
// provider served standard, the batch route otherwise. An empty route is
// taken as the sync route. When price is nil or does not know the model,
// both costs are 0 and Priced is false: the tokens still count, the
// request is flagged.
func Make(price PriceFunc, e llmfleet.LedgerEntry) llmfleet.LedgerEntry {
	if e.Route == "" {
		e.Route = llmfleet.RouteSync
	}
	served := tierRoute(e.PricedTier())
	other := llmfleet.RouteBatch
	switch {
	case e.Discounted():
		other = llmfleet.RouteSync
	case e.Route == llmfleet.RouteFlex:
		other = llmfleet.RouteFlex
	}
	e.CostUSD, e.OtherRouteUSD, e.Priced = 0, 0, false
	if price == nil {
		return e
	}
	cost, ok := price(e.Provider, e.Model, e.Usage, served)
	if !ok {
		return e
	}
	otherCost, ok := price(e.Provider, e.Model, e.Usage, other)
	if !ok {
		return e
	}
	if e.Discounted() && e.SyncUSD > 0 && e.SyncUSD < otherCost {
		// The sync route's bill with its own cache state, when lower
		// than the request's own usage at sync prices (which counts the
		// batch's cache misses as if sync had missed too): what it would
		// have paid is never shown above either.
		otherCost = e.SyncUSD
	}
	e.CostUSD, e.OtherRouteUSD, e.Priced = cost, otherCost, true
	return e
}

// tierRoute returns the route whose price is a tier's: the priority tier,
// which the price table does not know, is priced as the standard one.
func tierRoute(t llmfleet.Tier) llmfleet.Route {
	switch t {
	case llmfleet.TierFlex:
		return llmfleet.RouteFlex
	case llmfleet.TierBatch:
		return llmfleet.RouteBatch
	}
	return llmfleet.RouteSync
}

// Call describes one request as its caller saw it, for Entry.
type Call struct {
	// Provider names the provider; Model the requested model, used when
	// Response does not name the one that answered.
	Provider, Model string
	// Route is the route the request was sent on, used when there is no
	// Response (the request failed); Response.Route wins otherwise.
	Route llmfleet.Route
	// Budget is the request's latency budget (0: none).
	Budget time.Duration
	// Start is when the request was accepted, End when it was answered.
	Start, End time.Time
	// Response and Err are what Submit returned.
	Response *llmfleet.Response
	Err      error
}

// Entry returns the ledger entry of the call, without costs: pass it to
// Make. The budget counts as met when there is none, or when the answer
// came within it.
func (c Call) Entry() llmfleet.LedgerEntry {
	e := llmfleet.LedgerEntry{
		Time:     c.End,
		Provider: c.Provider,
		Model:    c.Model,
		Route:    c.Route,
		Outcome:  Outcome(c.Err),
		Latency:  c.End.Sub(c.Start),
		Budget:   c.Budget,
	}
	if e.Latency < 0 {
		e.Latency = 0
	}
	if r := c.Response; r != nil {
		e.RequestID = r.RequestID
		if r.Model != "" {
			e.Model = r.Model
		}
		if r.Route != "" {
			e.Route = r.Route
		}
		e.Usage = r.Usage
		e.Queued = r.Queued
		e.Turnaround = r.BatchTurnaround
		e.Tier = r.Tier
	}
	if e.Route == "" {
		e.Route = llmfleet.RouteSync
	}
	e.BudgetMet = llmfleet.BudgetMet(c.Err == nil, e.Latency, c.Budget)
	return e
}

// Outcome returns the ledger outcome of a request that ended with err; it
// is llmfleet.Outcome.
func Outcome(err error) string { return llmfleet.Outcome(err) }
