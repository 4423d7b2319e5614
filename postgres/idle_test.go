package postgres_test

import (
	"context"
	"database/sql"
	"net/url"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet/postgres"
	"github.com/llmfleet/llmfleet/postgres/pgtest"
)

// A transaction of the store's left open by a process that sends nothing
// more (paused, stuck) is ended by the server once a third of the lease (at least 1s) has passed,
// so that the row locks it held do not stall the replicas adopting its
// work (long enough for an adopter to renew its own lease in time); a URL
// that sets the timeout keeps its own.
func TestIdleTransactionEnded(t *testing.T) {
	t.Parallel()
	u := pgtest.URL(t)
	d := &postgres.DB{URL: u, Lease: 6 * time.Second} // a third of it, at least 1s
	if err := d.Open(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	var got string
	if err := d.Pool().QueryRowContext(t.Context(), `SHOW idle_in_transaction_session_timeout`).Scan(&got); err != nil || got != "2s" {
		t.Fatalf("idle_in_transaction_session_timeout %q, %v; want 2s", got, err)
	}

	stalled, err := d.Pool().BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer stalled.Rollback()
	if _, err := stalled.ExecContext(t.Context(), `SELECT id FROM replicas FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	other, err := sql.Open("pgx", u)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // far beyond the 2s: a stall, not a timing
	defer cancel()
	if _, err := other.ExecContext(ctx, `UPDATE replicas SET lease_until = lease_until`); err != nil {
		t.Fatalf("the rows the idle transaction locked stayed locked: %v", err)
	}
	if _, err := stalled.ExecContext(t.Context(), `SELECT 1`); err == nil {
		t.Fatal("the idle transaction went on after the server ended it")
	}

	pu, _ := url.Parse(pgtest.URL(t))
	q := pu.Query()
	q.Set("idle_in_transaction_session_timeout", "60000")
	pu.RawQuery = q.Encode()
	own := open(t, pu.String())
	if err := own.Pool().QueryRowContext(t.Context(), `SHOW idle_in_transaction_session_timeout`).Scan(&got); err != nil || got != "1min" {
		t.Fatalf("with the URL's setting: %q, %v; want 1min", got, err)
	}
}
