package dispatch

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/postgres"
	"github.com/llmfleet/llmfleet/postgres/pgtest"
	"github.com/llmfleet/llmfleet/vault"
)

// replica opens a dispatcher on a fleet's database under name.
func replica(t *testing.T, u, name string, f *fakeProvider, v *vault.Vault, pol Policy) (*Dispatcher, *postgres.DB) {
	t.Helper()
	db := &postgres.DB{URL: u, Replica: name}
	if err := db.Open(t.Context()); err != nil {
		t.Fatal(err)
	}
	d := &Dispatcher{Providers: []llmfleet.Provider{f}, Store: db, Sealer: v, Policy: pol, Lease: 3 * time.Second}
	if err := d.Open(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		d.Close(ctx)
		cancel()
		db.Close()
	})
	return d, db
}

// A request accepted by replica A and batched by replica B is rescued by
// A when its batch runs late: A's sync answer is kept and delivered; B's
// batch answer, which comes second, is recorded in the ledger as paid and
// not delivered (late), as one process records it. Real time: the rescue
// is due at 0.8s, the batch ends at 2s.
func TestFleetRescueElsewhere(t *testing.T) {
	u := pgtest.URL(t)
	v, err := vault.New(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	f := newFake()
	f.turnaround = func(string) time.Duration { return 2 * time.Second }
	base := Policy{BatchMinSize: 1000, RescueMargin: 100 * time.Millisecond, SyncLatencyPrior: 100 * time.Millisecond,
		PollInterval: 50 * time.Millisecond, MaxPollInterval: 100 * time.Millisecond,
		// A short prior: A's pool is not due for the budget's sake
		// before B's window sends B's.
		TurnaroundPrior: 10 * time.Millisecond}
	polA, polB := base, base
	polA.BatchWindow = time.Hour
	polB.BatchWindow = 50 * time.Millisecond
	a, db := replica(t, u, "a", f, v, polA)
	b, _ := replica(t, u, "b", f, v, polB)

	type got struct {
		resp *llmfleet.Response
		err  error
	}
	rescued, batched := make(chan got, 1), make(chan got, 1)
	r := req("k1", "rescued")
	r.ID = "lfr_rescued"
	if err := a.SubmitBatchFunc(t.Context(), time.Second, r, func(resp *llmfleet.Response, err error) { rescued <- got{resp, err} }); err != nil {
		t.Fatal(err)
	}
	r2 := req("k1", "batched")
	r2.ID = "lfr_batched"
	if err := b.SubmitBatchFunc(t.Context(), 0, r2, func(resp *llmfleet.Response, err error) { batched <- got{resp, err} }); err != nil {
		t.Fatal(err)
	}
	g := <-rescued
	if g.err != nil || g.resp.Route != llmfleet.RouteSync {
		t.Fatalf("the rescued request: %+v, %v; want the rescue's sync answer", g.resp, g.err)
	}
	if g = <-batched; g.err != nil {
		t.Fatalf("the batched request: %v", g.err)
	}
	if n := f.calls["create"]; n != 1 {
		t.Errorf("%d batches created, want 1 (B's, holding both)", n)
	}
	entries, err := db.Ledger(t.Context(), time.Unix(0, 0), time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	parts := map[string][]llmfleet.Rescue{}
	for _, e := range entries {
		parts[e.RequestID] = append(parts[e.RequestID], e.Rescue)
	}
	if p := parts[r.ID]; len(p) != 2 || !(p[0] == llmfleet.RescueSync && p[1] == llmfleet.RescueLate) {
		t.Errorf("ledger of the rescued request: %q, want [sync late]", p)
	}
	if p := parts[r2.ID]; len(p) != 1 || p[0] != llmfleet.RescueNone {
		t.Errorf("ledger of the batched request: %q, want one plain entry", p)
	}
}
