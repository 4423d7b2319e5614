// Package dashboard serves llmfleet's live dashboard at GET /llmfleet/: one
// page, its script and its stylesheet, all embedded in the binary (nothing
// is loaded from the internet). The page polls two JSON endpoints next to
// it: v1/stats, the ledger summary, and v1/dashboard, a Snapshot of the
// time series (savings over time, the sync/batch split, queue depth,
// turnaround per model) and of the batches in flight, served by
// SnapshotHandler. History accumulates the series from ledger entries;
// Source puts a snapshot together from it and the dispatcher's counters.
package dashboard
