// Package pgtest gives a test a PostgreSQL schema of its own on the test
// server: $LLMFLEET_TEST_POSTGRES, by default the local one
// (postgres://postgres@127.0.0.1:5432/test?sslmode=disable). An
// unreachable server skips the test, or fails it in CI (CI=true).
package pgtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the pgx driver of database/sql
)

// DefaultURL is the test server's URL when $LLMFLEET_TEST_POSTGRES is not
// set.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// URL returns the test server's URL with a search_path of a fresh schema
// (created by the store on first open), dropped when the test ends.
func URL(t testing.TB) string {
	t.Helper()
	base := os.Getenv("LLMFLEET_TEST_POSTGRES")
	if base == "" {
		base = DefaultURL
	}
	db, err := sql.Open("pgx", base)
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err = db.PingContext(ctx)
		cancel()
	}
	if err != nil {
		if db != nil {
			db.Close()
		}
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
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("LLMFLEET_TEST_POSTGRES %q: %v", base, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}
