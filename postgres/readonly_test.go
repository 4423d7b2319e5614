package postgres_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/postgres"
	"github.com/llmfleet/llmfleet/postgres/pgtest"
)

// readOnly reports whether err is a write refused because the
// transaction is read-only (SQLSTATE 25006).
func readOnly(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "25006"
}

// After a read-only episode the pool writes again, no backend killed:
// the sessions it opened while the role was read-only keep the setting
// after the RESET, and the first write one of them refuses has them all
// discarded, so that AddRequest, CompleteRequests and AddLedger succeed
// within a few tries (before the fix, every try failed until the
// sessions were killed).
func TestReadOnlyEpisode(t *testing.T) {
	role := pgtest.NewRole(t)
	d := open(t, role.URL)
	ctx := t.Context()
	now := time.Now()
	req := func(id string) *llmfleet.StoredRequest {
		return &llmfleet.StoredRequest{ID: id, Provider: "anthropic", CredentialID: "cred_x",
			Body: []byte(`{"n":1}`), Model: "m", AcceptedAt: now}
	}
	entry := func(i int) []llmfleet.LedgerEntry {
		return []llmfleet.LedgerEntry{{RequestID: fmt.Sprintf("lfr_ledger_%d", i), Time: now,
			Provider: "anthropic", Model: "m", Route: llmfleet.RouteBatch, Outcome: "ok"}}
	}
	complete := []llmfleet.Completion{{RequestID: "lfr_before",
		Result: &llmfleet.StoredResult{StatusCode: 200, Body: []byte(`{}`), CompletedAt: now}}}
	if err := d.AddRequest(ctx, req("lfr_before")); err != nil {
		t.Fatal(err)
	}

	role.SetReadOnly(t, true)
	d.DropIdle() // the episode reaches the pool: its next sessions are new
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range cap(errs) { // at once, so that several sessions open
		wg.Go(func() { errs <- d.AddLedger(ctx, entry(100+i)) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if !readOnly(err) {
			t.Fatalf("AddLedger in the episode: %v, want SQLSTATE 25006", err)
		}
	}
	if err := d.AddRequest(ctx, req("lfr_during")); !readOnly(err) {
		t.Fatalf("AddRequest in the episode: %v, want SQLSTATE 25006", err)
	}
	if _, err := d.CompleteRequests(ctx, complete); !readOnly(err) {
		t.Fatalf("CompleteRequests in the episode: %v, want SQLSTATE 25006", err)
	}
	opened := d.PoolStats().OpenConnections

	role.SetReadOnly(t, false)
	writes := []struct {
		name string
		try  func(i int) error
	}{
		{"AddRequest", func(i int) error { return d.AddRequest(ctx, req(fmt.Sprintf("lfr_after_%d", i))) }},
		{"CompleteRequests", func(int) error { _, err := d.CompleteRequests(ctx, complete); return err }},
		{"AddLedger", func(i int) error { return d.AddLedger(ctx, entry(i)) }},
	}
	for _, w := range writes {
		const tries = 3
		var err error
		for i := range tries {
			if err = w.try(i); err == nil {
				break
			}
			if !readOnly(err) {
				t.Fatalf("%s after the episode: %v", w.name, err)
			}
		}
		if err != nil {
			t.Fatalf("%s still refused after the episode ended (%d tries; %d sessions open at its end): %v",
				w.name, tries, opened, err)
		}
	}
	got, err := d.GetRequest(ctx, "lfr_before")
	if err != nil || got.State != llmfleet.RequestDone {
		t.Fatalf("lfr_before after the episode: %+v, %v", got, err)
	}
}

// ConnMaxLifetime renews the pool's sessions.
func TestConnMaxLifetime(t *testing.T) {
	d := &postgres.DB{URL: pgtest.URL(t), ConnMaxLifetime: 50 * time.Millisecond}
	if err := d.Open(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	deadline := time.Now().Add(30 * time.Second)
	for d.PoolStats().MaxLifetimeClosed == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no session closed for its lifetime: %+v", d.PoolStats())
		}
		if err := d.AddLedger(t.Context(), []llmfleet.LedgerEntry{{Time: time.Now(), Provider: "anthropic", Outcome: "ok"}}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
