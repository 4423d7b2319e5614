package main

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
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
// database when --secret-file is not given. It does not start with the
// database's name, so that copying llmfleet.db* does not copy the secret
// along with the credentials it seals.
const secretFileName = "llmfleet.secret"

// state is the durable state of "llmfleet serve": the store and the
// vault that seals the credentials kept in it.
type state struct {
	db     stateStore
	where  string // the database: its path, or its URL without password
	vault  *vault.Vault
	secret string // where the secret came from, for the log
	// fleetSince is, on a database several replicas share, when the
	// fleet's figures start (see observe.Config.FleetSince); nil alone.
	fleetSince func(context.Context) (time.Time, error)
}

// stateStore is the store of serve: a Store that also keeps the owners of
// the batches and files made through the pass-through APIs.
type stateStore interface {
	llmfleet.Store
	proxy.BatchOwners
}

// openState opens the database at dbPath (empty: sqlite.DefaultPath; a
// postgres:// URL: that PostgreSQL database) and the vault: under the
// secret in $LLMFLEET_SECRET if set, else in secretFile (empty:
// llmfleet.secret beside a SQLite database; required with PostgreSQL),
// created 0600 on first start.
func openState(ctx context.Context, dbPath, secretFile string, getenv func(string) string, logger *slog.Logger, replica fleetReplica) (*state, error) {
	pg := postgres.IsURL(dbPath)
	if pg && getenv(SecretEnv) == "" && secretFile == "" {
		return nil, fmt.Errorf("--db %s: give the secret sealing stored API keys in $%s or --secret-file (the same for every process on this database)", redactURL(dbPath), SecretEnv)
	}
	if dbPath == "" {
		p, err := sqlite.DefaultPath()
		if err != nil {
			return nil, fmt.Errorf("--db: %w", err)
		}
		dbPath = p
	}
	st := &state{}
	if env := getenv(SecretEnv); env != "" {
		secret, err := parseSecret(env)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", SecretEnv, err)
		}
		v, err := vault.New(secret)
		clear(secret)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", SecretEnv, err)
		}
		st.vault, st.secret = v, "$"+SecretEnv
	} else {
		flagName := "--secret-file"
		if secretFile == "" {
			secretFile = filepath.Join(filepath.Dir(dbPath), secretFileName)
			flagName = "--db " + dbPath + ": the secret file beside it"
		}
		v, err := vault.Open(secretFile)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", flagName, secretFile, err)
		}
		st.vault, st.secret = v, secretFile
	}
	if pg {
		db := &postgres.DB{URL: dbPath, Replica: replica.name, Lease: replica.lease}
		if err := db.Open(ctx); err != nil {
			return nil, fmt.Errorf("--db %s: %w", redactURL(dbPath), err)
		}
		st.db, st.where, st.fleetSince = db, redactURL(dbPath), db.FleetStart
		return st, nil
	}
	db := &sqlite.DB{Path: dbPath, Logger: logger}
	if err := db.Open(ctx); err != nil {
		return nil, fmt.Errorf("--db %s: %w", dbPath, err)
	}
	st.db, st.where = db, dbPath
	return st, nil
}

// fleetReplica is this process's name and lease in a fleet sharing a
// PostgreSQL database.
type fleetReplica struct {
	name  string
	lease time.Duration
}

// redactURL returns a database URL without its password.
func redactURL(s string) string {
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
