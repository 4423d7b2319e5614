package postgres_test

import (
	"database/sql"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/llmfleet/llmfleet/postgres"
	"github.com/llmfleet/llmfleet/postgres/pgtest"
	"github.com/llmfleet/llmfleet/storetest"
)

// compatFile is a pg_dump (--inserts, --no-owner, --no-privileges, its
// psql commands left out) of a schema storetest.FillCompat filled, then
// closed, with the llmfleet of issue 21 (migrations 1 to 4), before the
// SQL stores shared their core (issue 22): a database from an older
// llmfleet. Its schema is named compatSchema.
const (
	compatFile   = "testdata/compat-v4.sql"
	compatSchema = "llmfleet_compat"
)

// A database an older llmfleet filled opens, reads as it was written,
// has what its closed run owned adopted, and goes on working.
func TestCompatDatabase(t *testing.T) {
	dump, err := os.ReadFile(compatFile)
	if err != nil {
		t.Fatal(err)
	}
	u := pgtest.URL(t)
	pu, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	schema := pu.Query().Get("search_path")
	db, err := sql.Open("pgx", u)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c, err := db.Conn(t.Context()) // the dump sets the session's search_path
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.ExecContext(t.Context(), regexp.MustCompile(`\b`+compatSchema+`\b`).ReplaceAllString(string(dump), schema)); err != nil {
		t.Fatalf("loading %s: %v", compatFile, err)
	}
	d := open(t, u)
	storetest.CheckCompatRecords(t, d)
	queued, batches, err := d.Adopt(t.Context())
	if err != nil || len(queued) != 2 || len(batches) != 2 {
		t.Fatalf("Adopt: %d queued, %d batches, %v; want 2 and 2", len(queued), len(batches), err)
	}
	storetest.CheckCompatWrites(t, d)
}

// TestFillCompat writes the dump of a schema this llmfleet fills to the
// path in $LLMFLEET_COMPAT_FILL, and is skipped without it. A dump kept
// in testdata must come from a released llmfleet: the point of it is that
// an older one wrote it.
func TestFillCompat(t *testing.T) {
	path := os.Getenv("LLMFLEET_COMPAT_FILL")
	if path == "" {
		t.Skip("LLMFLEET_COMPAT_FILL not set")
	}
	u := pgtest.URL(t)
	d := &postgres.DB{URL: u, Replica: "compat"}
	if err := d.Open(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := storetest.FillCompat(t.Context(), d); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	pu, _ := url.Parse(u)
	schema := pu.Query().Get("search_path")
	pu.RawQuery = "sslmode=disable"
	out, err := exec.Command("pg_dump", "--inserts", "--no-owner", "--no-privileges", "--schema="+schema, pu.String()).Output()
	if err != nil {
		t.Fatalf("pg_dump: %v", err)
	}
	var keep []string
	for _, line := range strings.Split(string(out), "\n") {
		if !strings.HasPrefix(line, `\`) { // psql's \restrict and \unrestrict
			keep = append(keep, strings.ReplaceAll(line, schema, compatSchema))
		}
	}
	if err := os.WriteFile(path, []byte(strings.Join(keep, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
}
