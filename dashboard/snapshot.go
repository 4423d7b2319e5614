package dashboard

import (
	"time"

	"github.com/llmfleet/llmfleet"
)

// Snapshot is the JSON served at GET /llmfleet/v1/dashboard. Times are
// RFC 3339 with milliseconds. The ledger summary (totals, breakdowns,
// recent budget misses) is served apart, at /llmfleet/v1/stats.
type Snapshot struct {
	// Time is when the snapshot was taken.
	Time time.Time `json:"time"`
	// BucketSeconds is the width of one point of Savings and Traffic.
	BucketSeconds float64 `json:"bucket_seconds"`
	// Stats are the dispatcher's counters.
	Stats llmfleet.Stats `json:"stats"`
	// Savings is what was paid and what it would have cost at the sync
	// route, cumulated to the end of each bucket, oldest first.
	Savings []SavingsPoint `json:"savings"`
	// Traffic counts the requests answered in each bucket by route.
	Traffic []TrafficPoint `json:"traffic"`
	// Queue holds samples of the queue depth and batches in flight.
	Queue []QueuePoint `json:"queue"`
	// Turnaround holds, by model, the turnaround of recent batches.
	Turnaround map[string][]TurnaroundPoint `json:"turnaround"`
	// BatchesInFlight lists the batches being processed, oldest first,
	// when the wiring can list them (it needs a Store); the count is in
	// Stats.
	BatchesInFlight []BatchInFlight `json:"batches_in_flight"`
}

// SavingsPoint is the cumulated cost at the end of a bucket, each figure
// as the ledger's Summary has it (ledger.Summary): what was paid, what it
// would have cost at the sync route, the difference saved, what the
// cache writes routing caused cost (RoutingMissUSD), and the saving net
// of those it does not count already (NetSavedUSD).
type SavingsPoint struct {
	Time              time.Time `json:"time"`
	CostUSD           float64   `json:"cost_usd"`
	SyncEquivalentUSD float64   `json:"sync_equivalent_usd"`
	SavedUSD          float64   `json:"saved_usd"`
	RoutingMissUSD    float64   `json:"routing_miss_usd"`
	NetSavedUSD       float64   `json:"net_saved_usd"`
}

// TrafficPoint counts the requests of a bucket by route: sync, flex (a
// synchronous call at batch prices) and batch.
type TrafficPoint struct {
	Time         time.Time `json:"time"`
	SyncCalls    int64     `json:"sync_calls"`
	FlexCalls    int64     `json:"flex_calls"`
	BatchedCalls int64     `json:"batched_calls"`
}

// QueuePoint is one sample of the dispatcher's queue.
type QueuePoint struct {
	Time            time.Time `json:"time"`
	QueueDepth      int64     `json:"queue_depth"`
	BatchesInFlight int64     `json:"batches_in_flight"`
}

// TurnaroundPoint is the turnaround of one batch, at its end.
type TurnaroundPoint struct {
	Time    time.Time `json:"time"`
	Seconds float64   `json:"seconds"`
}

// BatchInFlight is a batch being processed.
type BatchInFlight struct {
	// ID is llmfleet's id of the batch, UpstreamID the provider's.
	ID         string `json:"id"`
	UpstreamID string `json:"upstream_id,omitempty"`
	Provider   string `json:"provider,omitempty"`
	// Models are the models of its requests; Size their number.
	Models []string `json:"models,omitempty"`
	Size   int      `json:"size"`
	// State is the batch's state ("intent" before its create call
	// returned, "created" after).
	State string `json:"state,omitempty"`
	// Since is when it was created (or its intent recorded); AgeSeconds
	// how long ago that was.
	Since      time.Time `json:"since"`
	AgeSeconds float64   `json:"age_seconds"`
}

// ms rounds a time to the millisecond, in UTC, for JavaScript.
func ms(t time.Time) time.Time { return t.UTC().Truncate(time.Millisecond) }
