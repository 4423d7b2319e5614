package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/llmfleet/llmfleet/internal/ledgerread"
	"github.com/llmfleet/llmfleet/internal/servestate"
	"github.com/llmfleet/llmfleet/ledger"
	"github.com/llmfleet/llmfleet/postgres"
	"github.com/llmfleet/llmfleet/sqlite"
	"gopkg.in/yaml.v3"
)

func init() { commands["stats"] = runStats }

const statsUsage = `usage: llmfleet stats [--db PATH | --url URL] [--since DURATION | --from TIME [--to TIME]] [--json]

Prints what the fleet paid, what the same traffic would have cost at the
sync route, and what batching saved, by model and by route, over a period
(first naming the database or URL it read); each client's spend this UTC
day and month against its limits (--url, or --db with --config naming
serve's config file);
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
	config := fs.String("config", "", "with --db, the config file of llmfleet serve: its clients' spend this UTC day and month against their limits is shown")
	if err := parseFlags(fs, args, os.Getenv); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if *base != "" && *dbPath != "" {
		return errors.New("give --db or --url, not both")
	}
	if *base != "" && *config != "" {
		return errors.New("--config goes with --db: with --url the running serve shows its clients' limits")
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
		s, err = ledgerread.FromURL(ctx, *base, *since, *from, *to)
	} else {
		var clients map[string]ledger.ClientLimits
		if clients, err = statsClients(*config); err != nil {
			return err
		}
		s, err = ledgerread.FromDB(ctx, *dbPath, *since, *from, *to, clients)
	}
	if err != nil {
		return err
	}
	where := statsSource(*base, *dbPath)
	if *asJSON {
		fmt.Fprintf(stderr, "llmfleet stats: the ledger of %s\n", where)
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(s)
	}
	fmt.Fprintf(stdout, "Ledger:           %s\n", where)
	return ledger.WriteTable(stdout, s)
}

// statsSource names what stats read: the URL of a running serve, or the
// database (a PostgreSQL URL, or the SQLite file, the default one
// resolved), any password in a URL masked.
func statsSource(base, dbPath string) string {
	switch {
	case base != "":
		return servestate.RedactURL(base)
	case postgres.IsURL(dbPath):
		return servestate.RedactURL(dbPath)
	case dbPath != "":
		return dbPath
	}
	if p, err := sqlite.DefaultPath(); err == nil {
		return p
	}
	return "the default database"
}

// statsClients returns the clients' limits of serve's config file, if
// one is given.
func statsClients(file string) (map[string]ledger.ClientLimits, error) {
	if file == "" {
		return nil, nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var cfg serveConfig
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		return nil, fmt.Errorf("%s: %v", file, err)
	}
	return clientLimits(cfg.Clients)
}
