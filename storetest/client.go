package storetest

import (
	"testing"

	"github.com/llmfleet/llmfleet"
)

// clientAttribution: a request keeps the client it was accepted for, also
// across a Reopen (a restart), so that the ledger entry written when it is
// answered names that client; the entry's Client comes back from Ledger
// and from Pending's requests.
func (s *suite) clientAttribution(t *testing.T) {
	st := s.store(t)
	r := request(4)
	r.Client = "cred_5f0e9a1b2c3d4e5f60718293"
	s.add(t, st, r)
	if s.h.Reopen != nil {
		st = s.reopened(t, st)
	}
	got := s.get(t, st, r.ID)
	if got.Client != r.Client {
		t.Fatalf("Client %q after storing, want %q", got.Client, r.Client)
	}
	q, _ := s.pending(t, st)
	if len(q) != 1 || q[0].Client != r.Client {
		t.Fatalf("Pending: %d queued, want 1 with Client %q", len(q), r.Client)
	}
	e := ledgerEntry(4, "ok")
	e.Client = got.Client // what a dispatcher copies from the stored request
	if _, err := st.CompleteRequests(ctx(t), []llmfleet.Completion{completion(4, result(4), e)}); err != nil {
		t.Fatalf("CompleteRequests: %v", err)
	}
	if s.h.Reopen != nil {
		st = s.reopened(t, st)
	}
	entries := s.allLedger(t, st)
	if len(entries) != 1 || entries[0].Client != r.Client {
		t.Fatalf("Ledger: %+v, want one entry with Client %q", entries, r.Client)
	}
	other := entry(5, base)
	other.Client = "alice"
	if err := st.AddLedger(ctx(t), []llmfleet.LedgerEntry{other}); err != nil {
		t.Fatalf("AddLedger: %v", err)
	}
	clients := map[string]bool{}
	for _, e := range s.allLedger(t, st) {
		clients[e.Client] = true
	}
	if !clients["alice"] || !clients[r.Client] {
		t.Errorf("Ledger clients %v, want alice and %s", clients, r.Client)
	}
}
