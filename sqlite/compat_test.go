package sqlite_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/llmfleet/llmfleet/sqlite"
	"github.com/llmfleet/llmfleet/storetest"
)

// compatFile is a database storetest.FillCompat filled, then closed, with
// the llmfleet of issue 21 (schema version 11), before the SQL stores
// shared their core (issue 22): a database from an older llmfleet.
const compatFile = "testdata/compat-v11.db"

// A database an older llmfleet filled opens, reads as it was written and
// goes on working.
func TestCompatDatabase(t *testing.T) {
	b, err := os.ReadFile(compatFile)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "llmfleet.db")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	storetest.CheckCompat(t, open(t, path))
}

// TestFillCompat fills a database for TestCompatDatabase at the path in
// $LLMFLEET_COMPAT_FILL, and is skipped without it. A database kept in
// testdata must come from a released llmfleet: the point of it is that
// an older one wrote it.
func TestFillCompat(t *testing.T) {
	path := os.Getenv("LLMFLEET_COMPAT_FILL")
	if path == "" {
		t.Skip("LLMFLEET_COMPAT_FILL not set")
	}
	d := &sqlite.DB{Path: path}
	if err := d.Open(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := storetest.FillCompat(t.Context(), d); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
}
