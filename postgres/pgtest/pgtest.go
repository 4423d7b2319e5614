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
	"strings"
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

// Role is a login role of a test's own: what a test does to the role
// (ALTER ROLE … SET, which reaches the role's new sessions only, or
// ending its sessions) touches no other test's sessions, on a server
// whose database tests share.
type Role struct {
	// Name is the role's name.
	Name string
	// URL is the URL of a fresh schema, as URL gives it, reached as the
	// role.
	URL string
	// Admin is a connection pool of the test server's own user, for what
	// the test does to the role.
	Admin *sql.DB
}

// NewRole creates a login role allowed to create schemas in the test
// database and returns it with the URL of a fresh schema reached as it.
// The role, and everything it owns, are dropped when the test ends.
func NewRole(t testing.TB) *Role {
	t.Helper()
	base := URL(t)
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	var b [6]byte
	rand.Read(b[:])
	r := &Role{Name: "lftest_role_" + hex.EncodeToString(b[:]), Admin: admin}
	database := `"` + strings.ReplaceAll(strings.TrimPrefix(u.Path, "/"), `"`, `""`) + `"`
	for _, q := range []string{`CREATE ROLE ` + r.Name + ` LOGIN`, `GRANT CREATE ON DATABASE ` + database + ` TO ` + r.Name} {
		if _, err := admin.Exec(q); err != nil {
			admin.Close()
			t.Fatalf("%s: %v", q, err)
		}
	}
	t.Cleanup(func() {
		for _, q := range []string{`DROP OWNED BY ` + r.Name + ` CASCADE`, `DROP ROLE ` + r.Name} {
			if _, err := admin.Exec(q); err != nil {
				t.Errorf("%s: %v", q, err)
			}
		}
		admin.Close()
	})
	u.User = url.User(r.Name)
	r.URL = u.String()
	return r
}

// SetReadOnly turns default_transaction_read_only on for the role's new
// sessions, or resets it; the sessions open keep the setting they
// started with.
func (r *Role) SetReadOnly(t testing.TB, on bool) {
	t.Helper()
	q := `ALTER ROLE ` + r.Name + ` RESET default_transaction_read_only`
	if on {
		q = `ALTER ROLE ` + r.Name + ` SET default_transaction_read_only = on`
	}
	if _, err := r.Admin.Exec(q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}
