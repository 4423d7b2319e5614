package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"

	_ "github.com/jackc/pgx/v5/stdlib"
)

// pgURL returns the URL of the test PostgreSQL server
// ($LLMFLEET_TEST_POSTGRES, by default the local one) with a schema of the
// test's own, dropped at its end. An unreachable server skips the test,
// or fails it in CI (CI=true).
func pgURL(t *testing.T) string {
	t.Helper()
	base := os.Getenv("LLMFLEET_TEST_POSTGRES")
	if base == "" {
		base = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	}
	db, err := sql.Open("pgx", base)
	if err == nil {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		err = db.PingContext(ctx)
		cancel()
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("PostgreSQL at %s unreachable (LLMFLEET_TEST_POSTGRES): %v", base, err)
		}
		t.Skipf("PostgreSQL at %s unreachable (set LLMFLEET_TEST_POSTGRES): %v", base, err)
	}
	var b [6]byte
	rand.Read(b[:])
	schema := "lftest_" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		db.Exec(`DROP SCHEMA IF EXISTS ` + schema + ` CASCADE`)
		db.Close()
	})
	u, _ := url.Parse(base)
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// --db takes a PostgreSQL URL: it needs the secret given, and a second
// serve on the same database and schema is refused (ErrLocked) until
// replicas share the engine.
func TestStatePostgres(t *testing.T) {
	u := pgURL(t)
	secret := strings.Repeat("ab", 32)
	env := func(k string) string {
		if k == SecretEnv {
			return secret
		}
		return ""
	}
	log := slog.New(slog.DiscardHandler)
	if _, err := openState(t.Context(), u, "", func(string) string { return "" }, log, fleetReplica{name: "r1"}); err == nil || !strings.Contains(err.Error(), SecretEnv) {
		t.Fatalf("no secret: %v", err)
	}
	st, err := openState(t.Context(), u, "", env, log, fleetReplica{name: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.db.Close()
	if strings.Contains(st.where, "search_path") == false {
		t.Errorf("where %q", st.where)
	}
	if _, err := openState(t.Context(), u, "", env, log, fleetReplica{name: "r1"}); !errors.Is(err, llmfleet.ErrLocked) {
		t.Fatalf("a second serve under the same replica name: %v, want ErrLocked", err)
	}
	st.db.Close()
	st2, err := openState(t.Context(), u, "", env, log, fleetReplica{name: "r1"})
	if err != nil {
		t.Fatalf("after the first closed: %v", err)
	}
	st2.db.Close()
}
