// Package dashboard serves llmfleet's live dashboard at GET /llmfleet/: one
// page, its script and its stylesheet, all embedded in the binary (nothing
// is loaded from the internet); its charts are drawn with uPlot 1.6.32
// (MIT), vendored in static/vendor. The page polls two JSON endpoints next to
// it: v1/stats, the ledger summary, and v1/dashboard, a Snapshot of the
// time series (savings over time, the sync/batch split, queue depth,
// turnaround per model) and of the batches in flight, served by
// SnapshotHandler. History accumulates the series from ledger entries and
// the queue samples a Sampler takes every few seconds, page open or not;
// Source puts a snapshot together from it and the dispatcher's counters.
package dashboard
