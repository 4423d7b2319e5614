package simrun

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"time"

	"github.com/llmfleet/llmfleet/ledger"
	"github.com/llmfleet/llmfleet/simulate"
	"github.com/llmfleet/llmfleet/sqlite"
)

// LedgerWorkload reads the ledger entries of the last since from the
// SQLite database of serve at path (empty: sqlite.DefaultPath) and turns
// them into a workload (simulate.FromLedger).
func LedgerWorkload(ctx context.Context, path, since string) ([]simulate.Turn, error) {
	if path == "" {
		p, err := sqlite.DefaultPath()
		if err != nil {
			return nil, err
		}
		path = p
	}
	// Opening creates a missing database: refuse instead.
	if _, err := os.Stat(path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("no llmfleet database at %s (see --db)", path)
		}
		return nil, err
	}
	p, err := ledger.ParsePeriod(since, "", "", time.Now())
	if err != nil {
		return nil, fmt.Errorf("--since: %w", err)
	}
	if p.From.IsZero() {
		p.From = time.Unix(0, 0)
	}
	db := &sqlite.DB{Path: path, Logger: slog.New(slog.DiscardHandler)}
	if err := db.Open(ctx); err != nil {
		return nil, err
	}
	defer db.Close()
	entries, err := db.Ledger(ctx, p.From, p.To)
	if err != nil {
		return nil, err
	}
	if len(entries) == 0 {
		return nil, fmt.Errorf("the ledger at %s has no entries in that period", path)
	}
	return simulate.FromLedger(entries), nil
}
