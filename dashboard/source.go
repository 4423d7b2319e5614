package dashboard

import (
	"context"
	"slices"

	"github.com/llmfleet/llmfleet"
)

// Source puts snapshots together for SnapshotHandler: its Snapshot method
// is the handler's hook. Every field is optional.
type Source struct {
	// History holds the series; nil leaves them empty.
	History *History
	// Stats returns the dispatcher's counters. The queue series is
	// sampled into History by a Sampler, not by snapshots: samples taken
	// only while a page is open would draw a false flat line.
	Stats func() llmfleet.Stats
	// InFlight lists the batches in flight; see InFlightFromPending.
	InFlight func(ctx context.Context) ([]BatchInFlight, error)
	// Clock tells the time; nil means the real clock.
	Clock llmfleet.Clock
}

// Snapshot returns the current snapshot.
func (s *Source) Snapshot(ctx context.Context) (Snapshot, error) {
	clock := s.Clock
	if clock == nil {
		clock = llmfleet.RealClock{}
	}
	now := clock.Now()
	var st llmfleet.Stats
	if s.Stats != nil {
		st = s.Stats()
	}
	var snap Snapshot
	if s.History != nil {
		snap = s.History.Snapshot(now)
	} else {
		snap = (&History{}).Snapshot(now)
	}
	snap.Stats = st
	snap.BatchesInFlight = []BatchInFlight{}
	if s.InFlight != nil {
		list, err := s.InFlight(ctx)
		if err != nil {
			return Snapshot{}, err
		}
		for _, b := range list {
			if !b.Since.IsZero() {
				b.AgeSeconds = max(0, now.Sub(b.Since).Seconds())
				b.Since = ms(b.Since)
			}
			snap.BatchesInFlight = append(snap.BatchesInFlight, b)
		}
		slices.SortStableFunc(snap.BatchesInFlight, func(a, b BatchInFlight) int { return a.Since.Compare(b.Since) })
	}
	return snap, nil
}

// InFlightFromPending lists the batches a Store reports pending (its
// Pending method): their models, sizes, and since when they have been in
// flight (the provider's created_at, else when their intent was recorded).
func InFlightFromPending(batches []*llmfleet.PendingBatch) []BatchInFlight {
	out := make([]BatchInFlight, 0, len(batches))
	for _, pb := range batches {
		if pb == nil {
			continue
		}
		b := pb.Batch
		since := b.CreatedAt
		if since.IsZero() {
			since = b.IntentAt
		}
		var models []string
		for _, r := range pb.Requests {
			if r != nil && r.Model != "" && !slices.Contains(models, r.Model) {
				models = append(models, r.Model)
			}
		}
		slices.Sort(models)
		size := b.Size
		if size == 0 {
			size = len(pb.Requests)
		}
		out = append(out, BatchInFlight{ID: b.ID, UpstreamID: b.UpstreamID, Provider: b.Provider,
			Models: models, Size: size, State: string(b.State), Since: since})
	}
	return out
}
