package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/postgres"
	"github.com/llmfleet/llmfleet/postgres/pgtest"
)

// lockRequests takes an exclusive lock on the requests table of the
// schema of u, in a transaction of its own, and returns the function
// that releases it.
func lockRequests(t *testing.T, u string) (release func()) {
	t.Helper()
	db, err := sql.Open("pgx", u)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := db.BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(`LOCK TABLE requests IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	done := false
	release = func() {
		if !done {
			done = true
			tx.Rollback()
			db.Close()
		}
	}
	t.Cleanup(release)
	return release
}

// An AddRequest waiting on a lock held elsewhere returns its context's
// error once the context ends, and its request is not stored, even after
// the lock is released: the insert was canceled on the server, not left
// to commit later. The other requests of its group, whose context goes
// on, are stored once the lock is released.
func TestAddRequestCanceledUnderALock(t *testing.T) {
	u := pgtest.URL(t)
	d, err := postgres.Open(t.Context(), u)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	release := lockRequests(t, u)
	at := time.Now()
	req := func(id string) *llmfleet.StoredRequest {
		return &llmfleet.StoredRequest{ID: id, Provider: "anthropic", CredentialID: "cred_x", Body: []byte(`{}`), Model: "m", AcceptedAt: at}
	}
	patient := make(chan error, 1)
	go func() { patient <- d.AddRequest(t.Context(), req("lfr_patient")) }()
	ctx, cancel := context.WithCancel(t.Context())
	hurried := make(chan error, 1)
	go func() { hurried <- d.AddRequest(ctx, req("lfr_hurried")) }()
	time.Sleep(200 * time.Millisecond) // both are waiting on the lock (or queued behind it)
	cancel()
	select {
	case err := <-hurried:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("the canceled AddRequest: %v, want context.Canceled", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the canceled AddRequest still waits on the lock")
	}
	release()
	if err := <-patient; err != nil {
		t.Fatalf("the AddRequest whose context went on: %v", err)
	}
	if _, err := d.GetRequest(t.Context(), "lfr_patient"); err != nil {
		t.Errorf("lfr_patient: %v", err)
	}
	time.Sleep(200 * time.Millisecond) // a statement left running would commit by now
	if _, err := d.GetRequest(t.Context(), "lfr_hurried"); !errors.Is(err, llmfleet.ErrNotFound) {
		t.Errorf("the canceled request: %v; want it not stored", err)
	}
}
