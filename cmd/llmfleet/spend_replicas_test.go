package main

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet/postgres/pgtest"
)

// TestSpendLimitAcrossReplicas: two replicas of one fleet on one fresh
// PostgreSQL database share a client's limit: what alice paid through
// replica A counts on replica B, which refuses her once it has read the
// fleet's spend (its sums are kept at most ledger.DefaultSpendTTL);
// replica A, which booked the payment itself, refuses her at once.
func TestSpendLimitAcrossReplicas(t *testing.T) {
	db := pgtest.URL(t)
	up, _ := spendUpstreams(t)
	config := up + "clients:\n  alice: {daily-usd: 0.000001}\n"
	secret := filepath.Join(t.TempDir(), "secret")
	a := serveInProcess(t, config, "--db", db, "--secret-file", secret, "--replica-name", "a")
	b := serveInProcess(t, config, "--db", db, "--secret-file", secret, "--replica-name", "b")
	f := spendFaces[0]
	if resp, body := f.call(t, a, "alice-key", "paid on a"); resp.StatusCode != 200 {
		t.Fatalf("alice's first call: %d %s", resp.StatusCode, body)
	}
	// Replica A books what she paid as it is answered; replica B reads it
	// from the fleet's store.
	for _, r := range []struct{ name, base string }{{"a", a}, {"b", b}} {
		deadline := time.Now().Add(30 * time.Second)
		for {
			cs := clientStats(t, r.base)
			if len(cs) == 1 && cs[0]["limit_reached"] == "daily-usd" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("replica %s never saw alice's spend: %v", r.name, cs)
			}
			time.Sleep(50 * time.Millisecond)
		}
		resp, body := f.call(t, r.base, "alice-key", "refused on "+r.name)
		if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(body, "daily-usd limit of $0.000001") {
			t.Errorf("replica %s: %d %s", r.name, resp.StatusCode, body)
		}
		if resp, body := f.call(t, r.base, "bob-key", "bob on "+r.name); resp.StatusCode != 200 {
			t.Errorf("replica %s: bob without limits: %d %s", r.name, resp.StatusCode, body)
		}
	}
}
