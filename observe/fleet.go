package observe

import (
	"context"
	"sync"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/ledger"
)

// fleetSettle is how old a ledger entry must be before the fleet's
// totals count it for good: by then every replica has written it (a
// sync call's entry waits at most a group-commit window, a batched one is
// written with its result). Younger entries are read again each time.
const fleetSettle = time.Minute

// fleetTotals is the ledger in the store since a time (the whole ledger
// for the stats without a period; every replica sharing the store reads
// it alike), read a little at a time: what is older than fleetSettle
// is added once, so a stats request reads the last minute's entries, not
// the whole history, however long the fleet has run.
type fleetTotals struct {
	mu        sync.Mutex
	from      time.Time // the fleet's start these totals count from
	settledTo time.Time // entries before it are in settled
	settled   *ledger.Totals
	batches   map[string]bool // batch ids of the settled entries
}

// summary returns the fleet's summary from since to now.
func (f *fleetTotals) summary(ctx context.Context, r ledger.Reader, since, now time.Time) (ledger.Summary, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.settled == nil || !f.from.Equal(since) {
		f.from, f.settledTo, f.settled, f.batches = since, since, &ledger.Totals{}, map[string]bool{}
	}
	if cut := now.Add(-fleetSettle); cut.After(f.settledTo) {
		entries, err := readLedger(ctx, r, f.settledTo, cut)
		if err != nil {
			return ledger.Summary{}, err
		}
		f.add(f.settled, f.batches, entries)
		f.settledTo = cut
	}
	recent, err := readLedger(ctx, r, f.settledTo, now.Add(time.Hour))
	if err != nil {
		return ledger.Summary{}, err
	}
	t, batches := f.settled.Clone(), map[string]bool{}
	f.add(t, batches, recent)
	s := t.Summary()
	s.From, s.To = since, now
	s.BatchesSubmitted = int64(len(f.batches) + len(batches))
	for id := range batches {
		if f.batches[id] {
			s.BatchesSubmitted--
		}
	}
	return s, nil
}

// add counts entries into t and their batch ids into batches.
func (f *fleetTotals) add(t *ledger.Totals, batches map[string]bool, entries []llmfleet.LedgerEntry) {
	t.Add(entries...)
	for _, e := range entries {
		if e.BatchID != "" {
			batches[e.BatchID] = true
		}
	}
}

// readLedger reads the entries in [from, to); a zero from is the
// beginning.
func readLedger(ctx context.Context, r ledger.Reader, from, to time.Time) ([]llmfleet.LedgerEntry, error) {
	if from.IsZero() {
		from = time.Unix(0, 0)
	}
	return r.Ledger(ctx, from, to)
}
