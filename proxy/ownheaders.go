package proxy

import (
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/llmfleet/llmfleet"
)

// HeaderRouteReason says, on the answer of a routed call, why its route
// is not simply the one its budget chose: the client's zero data
// retention ("zdr: …") or spend limit ("batch-only: …"); or, for a call
// that went sync without being forced there, that it had no latency
// budget, or one at or under the sync ceiling (the dispatcher's
// SyncMaxLatency), whether the budget came in the header or in the
// /budget/<ms>/ path prefix.
const HeaderRouteReason = "Llmfleet-Route-Reason"

// requestHeaders are the request headers of llmfleet's own protocol, as
// a refusal names them.
func requestHeaders() []string {
	return []string{"llmfleet-latency-budget-ms", "llmfleet-route", "llmfleet-deadline"}
}

// unknownOwnHeader refuses a routed call that carries an llmfleet-*
// header llmfleet does not know (a misspelt llmfleet-latency-budget would
// otherwise leave the call without its budget, silently): 400 naming the
// header and the known ones.
func unknownOwnHeader(h http.Header, bare bool) *refusal {
	var unknown []string
	const prefix = "llmfleet-"
	for k := range h {
		// Lowered only when it is one of llmfleet's: strings.ToLower
		// allocates for every canonical (capitalized) header name.
		if len(k) < len(prefix) || !strings.EqualFold(k[:len(prefix)], prefix) {
			continue
		}
		if name := strings.ToLower(k); !slices.Contains(requestHeaders(), name) {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	slices.Sort(unknown)
	known := requestHeaders()
	return &refusal{status: http.StatusBadRequest, typ: "invalid_request_error", param: unknown[0], bare: bare,
		msg: "llmfleet has no request header " + unknown[0] + "; its headers are " + strings.Join(known[:len(known)-1], ", ") +
			" and " + known[len(known)-1] + " (the budget: llmfleet-latency-budget-ms, in integer milliseconds)."}
}

// syncCeiling is a Submitter that tells the largest budget that always
// goes sync (dispatch.Dispatcher is one).
type syncCeiling interface {
	SyncMaxLatency() time.Duration
}

// routeReason returns why a call the plan sent sync went there, for
// HeaderRouteReason, or "" when the reason is the dispatcher's own
// (turnarounds, prices) or the route was forced.
func routeReason(s *Server, c *call) string {
	if c.route != llmfleet.RouteSync || c.forced {
		return ""
	}
	if c.budget <= 0 {
		return "no latency budget (the llmfleet-latency-budget-ms header or the /budget/<ms>/ path prefix gives one): a call without one goes sync"
	}
	sc, ok := s.Submitter.(syncCeiling)
	if !ok || c.budget > sc.SyncMaxLatency() {
		return ""
	}
	return "the latency budget of " + itoa(c.budget.Milliseconds()) + " ms is at or under the sync ceiling of " +
		itoa(sc.SyncMaxLatency().Milliseconds()) + " ms (serve --sync-max-latency): a call with such a budget goes sync"
}
