// Package ledgerread reads the cost ledger of "llmfleet serve" for the
// commands that report on it: summaries of a period from its database or
// from a running serve, and its SQLite database opened only if it exists.
package ledgerread

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/llmfleet/llmfleet/internal/servestate"
	"github.com/llmfleet/llmfleet/ledger"
	"github.com/llmfleet/llmfleet/postgres"
	"github.com/llmfleet/llmfleet/sqlite"
)

// FromDB summarizes the ledger of a period (see ledger.ParsePeriod) read
// from the database of serve at path: a postgres:// URL, or a SQLite
// file (empty: sqlite.DefaultPath) that must exist. With clients, the
// summary's Clients are what those clients paid this UTC day and month
// against their limits.
func FromDB(ctx context.Context, path, since, from, to string, clients map[string]ledger.ClientLimits) (ledger.Summary, error) {
	p, err := ledger.ParsePeriod(since, from, to, time.Now())
	if err != nil {
		return ledger.Summary{}, err
	}
	if postgres.IsURL(path) {
		db := &postgres.DB{URL: path, MaxConns: 2}
		if err := db.Open(ctx); err != nil {
			return ledger.Summary{}, fmt.Errorf("--db %s: %w", servestate.RedactURL(path), err)
		}
		defer db.Close()
		return summarize(ctx, db, p, clients)
	}
	db, err := OpenSQLite(ctx, path)
	if err != nil {
		return ledger.Summary{}, err
	}
	defer db.Close()
	return summarize(ctx, db, p, clients)
}

// summarize summarizes the ledger of period p from db, with clients' spend
// against their limits.
func summarize(ctx context.Context, db servestate.Store, p ledger.Period, clients map[string]ledger.ClientLimits) (ledger.Summary, error) {
	s, err := ledger.SummarizePeriod(ctx, db, p)
	if err != nil || len(clients) == 0 {
		return s, err
	}
	s.Clients = ledger.NewSpend(ledger.SpendConfig{Store: db, Limits: clients}).Clients(ctx)
	return s, nil
}

// OpenSQLite opens the SQLite database of serve at path (empty:
// sqlite.DefaultPath), which must exist: opening would create a missing
// one, and a mistyped path would read as an empty ledger.
func OpenSQLite(ctx context.Context, path string) (*sqlite.DB, error) {
	if path == "" {
		def, err := sqlite.DefaultPath()
		if err != nil {
			return nil, err
		}
		path = def
	}
	if _, err := os.Stat(path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("no llmfleet database at %s (see --db)", path)
		}
		return nil, err
	}
	db := &sqlite.DB{Path: path, Logger: slog.New(slog.DiscardHandler)}
	if err := db.Open(ctx); err != nil {
		return nil, err
	}
	return db, nil
}

// FromURL asks the serve at base for the summary of a period
// (GET /llmfleet/v1/stats).
func FromURL(ctx context.Context, base, since, from, to string) (ledger.Summary, error) {
	var s ledger.Summary
	q := url.Values{}
	switch {
	case from != "":
		q.Set("from", from)
		if to != "" {
			q.Set("to", to)
		}
	default:
		q.Set("since", since)
		if to != "" {
			q.Set("to", to)
		}
	}
	u := strings.TrimSuffix(base, "/") + "/llmfleet/v1/stats?" + q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return s, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return s, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return s, err
	}
	if resp.StatusCode != http.StatusOK {
		var env struct {
			Error struct{ Message string } `json:"error"`
		}
		if json.Unmarshal(body, &env) == nil && env.Error.Message != "" {
			return s, fmt.Errorf("%s: %s: %s", u, resp.Status, env.Error.Message)
		}
		return s, fmt.Errorf("%s: %s", u, resp.Status)
	}
	if err := json.Unmarshal(body, &s); err != nil {
		return s, fmt.Errorf("%s: %v", u, err)
	}
	return s, nil
}
