// Package observe is the observability pipeline of "llmfleet serve": the
// cost ledger, the Prometheus metrics and the live dashboard, fed by the
// ledger entries of the dispatcher and of the proxy.
//
// A Pipeline prices each entry it is given (Observe, or Counted for an
// entry recorded in the store by someone else), counts it in its running
// totals, its metrics and the dashboard's history, and with a store
// records it there through a ledger.Writer. Its Handler serves, in front
// of the proxy, GET /llmfleet/v1/stats, /llmfleet/v1/dashboard, the
// dashboard page under /llmfleet/ and /metrics.
//
// ErrorCounter counts the failed calls of the dispatcher's provider client
// in the metrics; LogBodies logs message bodies for --log-bodies.
//
// A Pipeline holds no global state: its price function, store, metrics
// registry, logger and clock are given in its Config.
package observe
