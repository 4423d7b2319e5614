package sqlite_test

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/sqlite"
)

// TestBatchOwners checks that batch owners are recorded once, read back,
// unknown for other batches, and kept across a reopen.
func TestBatchOwners(t *testing.T) {
	path := filepath.Join(t.TempDir(), "llmfleet.db")
	d := &sqlite.DB{Path: path}
	if err := d.Open(t.Context()); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := d.RecordBatchOwner(ctx, "msgbatch_a", "cred_alice"); err != nil {
		t.Fatal(err)
	}
	// A second record of the same batch keeps the first owner.
	if err := d.RecordBatchOwner(ctx, "msgbatch_a", "cred_bob"); err != nil {
		t.Fatal(err)
	}
	if got, err := d.BatchOwner(ctx, "msgbatch_a"); got != "cred_alice" || err != nil {
		t.Fatalf("BatchOwner = %q, %v", got, err)
	}
	if _, err := d.BatchOwner(ctx, "msgbatch_b"); !errors.Is(err, llmfleet.ErrNotFound) {
		t.Fatalf("BatchOwner of an unknown batch: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d = open(t, path)
	if got, err := d.BatchOwner(ctx, "msgbatch_a"); got != "cred_alice" || err != nil {
		t.Fatalf("after reopen: BatchOwner = %q, %v", got, err)
	}
	// Owners go with the ledger's retention, not the results'.
	if _, err := d.Purge(ctx, time.Now().Add(time.Hour), time.Now().Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got, err := d.BatchOwner(ctx, "msgbatch_a"); got != "cred_alice" || err != nil {
		t.Fatalf("after a results purge: BatchOwner = %q, %v", got, err)
	}
	if _, err := d.Purge(ctx, time.Now().Add(time.Hour), time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := d.BatchOwner(ctx, "msgbatch_a"); !errors.Is(err, llmfleet.ErrNotFound) {
		t.Fatalf("after a ledger purge: %v", err)
	}
}
