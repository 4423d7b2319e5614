// Package servestate opens the durable state of "llmfleet serve": its
// store, a SQLite file or a PostgreSQL database, and the vault sealing
// the API keys kept in it, under a secret from the environment or a file.
package servestate

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/postgres"
	"github.com/llmfleet/llmfleet/proxy"
	"github.com/llmfleet/llmfleet/sqlite"
	"github.com/llmfleet/llmfleet/vault"
)

// SecretEnv names the environment variable by which an operator gives the
// vault's secret instead of a file: at least 32 random bytes, as hex or
// base64 (e.g. `openssl rand -hex 32`).
const SecretEnv = "LLMFLEET_SECRET"

// secretFileName is the name of the secret file created beside the
// database when no secret file is given. It does not start with the
// database's name, so that copying llmfleet.db* does not copy the secret
// along with the credentials it seals.
const secretFileName = "llmfleet.secret"

// Config says where the state is. The zero Config is a SQLite database
// at sqlite.DefaultPath, its secret beside it, read from os.Getenv.
type Config struct {
	// DB is the database: a SQLite file (empty: sqlite.DefaultPath), or a
	// postgres:// URL.
	DB string
	// SecretFile holds the secret when $LLMFLEET_SECRET is not set
	// (empty: llmfleet.secret beside a SQLite database; with PostgreSQL
	// one of the two must be given). It is created 0600 if missing.
	SecretFile string
	// Getenv reads the environment (nil: os.Getenv).
	Getenv func(string) string
	// Logger is the SQLite store's.
	Logger *slog.Logger
	// Replica and Lease are this process's name and lease in a fleet
	// sharing a PostgreSQL database.
	Replica string
	Lease   time.Duration
}

// State is the durable state of "llmfleet serve": the store and the
// vault that seals the credentials kept in it.
type State struct {
	DB    Store
	Where string // the database: its path, or its URL without password
	Vault *vault.Vault
	// Secret is where the secret came from, for the log: the file, or
	// $LLMFLEET_SECRET.
	Secret string
}

// Store is the store of serve: a Store that also keeps the owners of
// the batches and files made through the pass-through APIs.
type Store interface {
	llmfleet.Store
	proxy.BatchOwners
	llmfleet.SpendStore
}

// Open opens the vault, then the database. Its errors name the flags of
// serve they come from (--db, --secret-file) or $LLMFLEET_SECRET.
func Open(ctx context.Context, cfg Config) (*State, error) {
	getenv := cfg.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	dbPath := cfg.DB
	pg := postgres.IsURL(dbPath)
	if pg && getenv(SecretEnv) == "" && cfg.SecretFile == "" {
		return nil, fmt.Errorf("--db %s: give the secret sealing stored API keys in $%s or --secret-file (the same for every process on this database)", RedactURL(dbPath), SecretEnv)
	}
	if dbPath == "" {
		p, err := sqlite.DefaultPath()
		if err != nil {
			return nil, fmt.Errorf("--db: %w", err)
		}
		dbPath = p
	}
	st := &State{}
	var err error
	if st.Vault, st.Secret, err = openVault(getenv(SecretEnv), cfg.SecretFile, dbPath); err != nil {
		return nil, err
	}
	if pg {
		db := &postgres.DB{URL: dbPath, Replica: cfg.Replica, Lease: cfg.Lease}
		if err := db.Open(ctx); err != nil {
			return nil, fmt.Errorf("--db %s: %w", RedactURL(dbPath), err)
		}
		st.DB, st.Where = db, RedactURL(dbPath)
		return st, nil
	}
	db := &sqlite.DB{Path: dbPath, Logger: cfg.Logger}
	if err := db.Open(ctx); err != nil {
		return nil, fmt.Errorf("--db %s: %w", dbPath, err)
	}
	st.DB, st.Where = db, dbPath
	return st, nil
}

// openVault opens the vault under the secret env (the value of
// $LLMFLEET_SECRET) if set, else in secretFile (empty: beside dbPath),
// and says where the secret came from.
func openVault(env, secretFile, dbPath string) (*vault.Vault, string, error) {
	if env != "" {
		secret, err := parseSecret(env)
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", SecretEnv, err)
		}
		v, err := vault.New(secret)
		clear(secret)
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", SecretEnv, err)
		}
		return v, "$" + SecretEnv, nil
	}
	flagName := "--secret-file"
	if secretFile == "" {
		secretFile = filepath.Join(filepath.Dir(dbPath), secretFileName)
		flagName = "--db " + dbPath + ": the secret file beside it"
	}
	v, err := vault.Open(secretFile)
	if err != nil {
		return nil, "", fmt.Errorf("%s %s: %w", flagName, secretFile, err)
	}
	return v, secretFile, nil
}

// RedactURL returns a database URL without its password, for logs and
// errors.
func RedactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(a URL that does not parse)"
	}
	return u.Redacted()
}

// parseSecret decodes an operator-given secret: hex, or base64 (standard
// or URL alphabet, padded or not).
func parseSecret(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if b, err := hex.DecodeString(s); err == nil {
		return b, nil
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return b, nil
		}
	}
	return nil, errors.New("the secret is neither hex nor base64")
}
