package dispatch

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmfleet/llmfleet"
)

// Issue 24: a request that is never batched (a ZDR client's) is routed
// between sync and flex whatever its budget and cost; one taken only
// batched (a client over its spend limit) is batched when its budget
// allows a batch, even when the cost model would keep it sync, and goes
// sync when it does not.
func TestRoutingNoBatchAndBatchOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.turnaround = func(string) time.Duration { return time.Minute }
		d := &Dispatcher{Providers: []llmfleet.Provider{f}, Prices: priced, Policy: Policy{TurnaroundPrior: time.Minute, CacheBatchRate: 0.9}}
		if err := d.Open(); err != nil {
			t.Fatal(err)
		}
		defer d.Close(t.Context())
		cred := llmfleet.Credential{APIKey: "k"}
		first := &llmfleet.Request{Credential: cred, Body: agentTurn("h1", "warm", 0)}
		u := llmfleet.Usage{InputTokens: 10, CacheCreationInputTokens: 11_500, OutputTokens: 800}
		u.CacheCreation.Ephemeral1hInputTokens, u.CacheCreation.Ephemeral5mInputTokens = 10_000, 1_500
		d.ObserveCache(first, llmfleet.RouteSync, u, time.Now())
		warm := &llmfleet.Request{Credential: cred, Body: agentTurn("h1", "warm", 1)}
		cold := &llmfleet.Request{Credential: cred, Body: agentTurn("h2", "cold", 1)}
		for _, tc := range []struct {
			name    string
			req     *llmfleet.Request
			budget  time.Duration
			noBatch bool
			only    bool
			want    llmfleet.Route
		}{
			{"cold, patient", cold, time.Hour, false, false, llmfleet.RouteBatch},
			{"cold, patient, never batched", cold, time.Hour, true, false, llmfleet.RouteSync},
			{"warm in the sync cache", warm, time.Hour, false, false, llmfleet.RouteSync},
			{"warm in the sync cache, batch only", warm, time.Hour, false, true, llmfleet.RouteBatch},
			{"cold, impatient, batch only", cold, time.Second, false, true, llmfleet.RouteSync},
		} {
			r := *tc.req
			r.NoBatch, r.BatchOnly = tc.noBatch, tc.only
			if got := d.Plan(tc.budget, &r); got != tc.want {
				t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
			}
		}
	})
}
