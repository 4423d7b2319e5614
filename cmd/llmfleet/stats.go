package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
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

func init() { commands["stats"] = runStats }

const statsUsage = `usage: llmfleet stats [--db PATH | --url URL] [--since DURATION | --from TIME [--to TIME]] [--json]

Prints what the fleet paid, what the same traffic would have cost at the
sync route, and what batching saved, by model and by route, over a period;
and the prompt cache's figures: the cache hit rate by route and model
(tokens read from the cache of those read or written), what the cache
writes that routing caused cost (routing misses), and the saving net of
them.

It reads the cost ledger from the database of "llmfleet serve" (--db;
default: the one "llmfleet serve" uses without --db), which a running
proxy may be using, or asks a running proxy for it (--url, e.g.
http://127.0.0.1:8787). The period is the last --since (24h by
default; 7d for a week; 0 for everything kept), or --from to --to (RFC
3339 times; --to defaults to now).

` + envUsage + `
flags:
`

// runStats prints the cost ledger of a period as a table (or JSON).
func runStats(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("stats", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		io.WriteString(stderr, statsUsage)
		fs.PrintDefaults()
	}
	dbPath := fs.String("db", "", "database of llmfleet serve: a SQLite file (default: llmfleet/llmfleet.db in $XDG_DATA_HOME or ~/.local/share) or a postgres:// URL")
	base := fs.String("url", "", "base URL of a running llmfleet serve to ask instead of reading a database")
	since := fs.String("since", "24h", "the period: the last DURATION (e.g. 90m, 24h, 7d; 0 for everything kept)")
	from := fs.String("from", "", "start of the period (RFC 3339); overrides --since")
	to := fs.String("to", "", "end of the period (RFC 3339; default now)")
	asJSON := fs.Bool("json", false, "print the summary as JSON rather than a table")
	if err := parseFlags(fs, args, os.Getenv); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if *base != "" && *dbPath != "" {
		return errors.New("give --db or --url, not both")
	}
	if *from != "" {
		*since = ""
	}
	if _, err := ledger.ParsePeriod(*since, *from, *to, time.Now()); err != nil {
		return err
	}
	var (
		s   ledger.Summary
		err error
	)
	if *base != "" {
		s, err = statsFromURL(ctx, *base, *since, *from, *to)
	} else {
		s, err = statsFromDB(ctx, *dbPath, *since, *from, *to)
	}
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(s)
	}
	return ledger.WriteTable(stdout, s)
}

// statsFromDB summarizes the ledger of a period read from the database.
func statsFromDB(ctx context.Context, path, since, from, to string) (ledger.Summary, error) {
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
		return ledger.SummarizePeriod(ctx, db, p)
	}
	if path == "" {
		def, err := sqlite.DefaultPath()
		if err != nil {
			return ledger.Summary{}, err
		}
		path = def
	}
	// Opening creates a missing database: refuse instead, so that a
	// mistyped path is not mistaken for an empty ledger.
	if _, err := os.Stat(path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return ledger.Summary{}, fmt.Errorf("no llmfleet database at %s (see --db)", path)
		}
		return ledger.Summary{}, err
	}
	db := &sqlite.DB{Path: path, Logger: slog.New(slog.DiscardHandler)}
	if err := db.Open(ctx); err != nil {
		return ledger.Summary{}, err
	}
	defer db.Close()
	return ledger.SummarizePeriod(ctx, db, p)
}

// statsFromURL asks a running proxy for the summary of a period.
func statsFromURL(ctx context.Context, base, since, from, to string) (ledger.Summary, error) {
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
