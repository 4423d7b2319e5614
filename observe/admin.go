package observe

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/dashboard"
	"github.com/llmfleet/llmfleet/ledger"
)

// adminGate tells an admin from anyone else by the admin key, which it
// keeps only as a SHA-256 hash. Its zero value knows no admin.
type adminGate struct {
	hash [sha256.Size]byte
	set  bool
}

// newAdminGate returns the gate of an admin key; "" admits nobody.
func newAdminGate(key string) adminGate {
	if key == "" {
		return adminGate{}
	}
	return adminGate{hash: sha256.Sum256([]byte(key)), set: true}
}

// admits reports whether r presents the admin key, as x-api-key or as
// Authorization: Bearer. The hashes are compared in constant time.
func (g adminGate) admits(r *http.Request) bool {
	if !g.set {
		return false
	}
	keys := []string{r.Header.Get("X-Api-Key")}
	if a := r.Header.Get("Authorization"); len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
		keys = append(keys, strings.TrimSpace(a[7:]))
	}
	ok := 0
	for _, k := range keys {
		if k == "" {
			continue
		}
		h := sha256.Sum256([]byte(k))
		ok |= subtle.ConstantTimeCompare(h[:], g.hash[:])
	}
	return ok == 1
}

// aggregatesOnly strips a summary of what is per request: the list of
// recent budget misses (request ids, batch ids, latencies of single
// calls). Totals and breakdowns stay.
func aggregatesOnly(s ledger.Summary) ledger.Summary {
	s.RecentBudgetMisses = []llmfleet.LedgerEntry{}
	return s
}

// snapshotFor returns the dashboard snapshot function for one caller:
// for anyone but an admin, the batches in flight go without their ids.
func snapshotFor(src *dashboard.Source, admin bool) func(context.Context) (dashboard.Snapshot, error) {
	return func(ctx context.Context) (dashboard.Snapshot, error) {
		s, err := src.Snapshot(ctx)
		if err != nil || admin {
			return s, err
		}
		for i := range s.BatchesInFlight {
			s.BatchesInFlight[i].ID, s.BatchesInFlight[i].UpstreamID = "", ""
		}
		return s, nil
	}
}
