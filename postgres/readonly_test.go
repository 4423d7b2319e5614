package postgres_test

import (
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/postgres"
	"github.com/llmfleet/llmfleet/postgres/pgtest"
)

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
