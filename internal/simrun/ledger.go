package simrun

import (
	"context"
	"fmt"
	"time"

	"github.com/llmfleet/llmfleet/internal/ledgerread"
	"github.com/llmfleet/llmfleet/ledger"
	"github.com/llmfleet/llmfleet/simulate"
)

// LedgerWorkload reads the ledger entries of the last since from the
// SQLite database of serve at path (empty: sqlite.DefaultPath) and turns
// them into a workload (simulate.FromLedger).
func LedgerWorkload(ctx context.Context, path, since string) ([]simulate.Turn, error) {
	db, err := ledgerread.OpenSQLite(ctx, path)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	p, err := ledger.ParsePeriod(since, "", "", time.Now())
	if err != nil {
		return nil, fmt.Errorf("--since: %w", err)
	}
	if p.From.IsZero() {
		p.From = time.Unix(0, 0)
	}
	entries, err := db.Ledger(ctx, p.From, p.To)
	if err != nil {
		return nil, err
	}
	if len(entries) == 0 {
		return nil, fmt.Errorf("the ledger at %s has no entries in that period", db.Path)
	}
	return simulate.FromLedger(entries), nil
}
