package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
)

// recordCreated: a process whose create outlived its lease, while another
// adopted the batch, does not record it created (two replicas would track
// it), nor does anyone record a batch no longer in flight.
func (s *sharedSuite) recordCreated(t *testing.T) {
	sts := s.stores(t, 2)
	a, b := sts[0], sts[1]
	addTo(t, a, pooled(1, "p"))
	if _, err := a.Claim(ctx(t), batch(1), "p", later, 1, 1<<40); err != nil {
		t.Fatal(err)
	}
	if err := b.RecordCreated(ctx(t), batch(1).ID, "msgbatch_b", later); !errors.Is(err, llmfleet.ErrStale) {
		t.Fatalf("RecordCreated of a live process's batch: %v, want ErrStale", err)
	}
	// A's create outlives its lease; B adopts the batch meanwhile.
	if _, err := a.Heartbeat(ctx(t), 0); err != nil {
		t.Fatal(err)
	}
	if _, bs, err := b.Adopt(ctx(t)); err != nil || len(bs) != 1 {
		t.Fatalf("Adopt: %d batches, %v", len(bs), err)
	}
	if err := a.RecordCreated(ctx(t), batch(1).ID, "msgbatch_a", later); !errors.Is(err, llmfleet.ErrStale) {
		t.Fatalf("RecordCreated of a batch adopted meanwhile: %v, want ErrStale", err)
	}
	if err := b.RecordCreated(ctx(t), batch(1).ID, "msgbatch_a", later); err != nil {
		t.Fatalf("RecordCreated by the adopter: %v", err)
	}
	if err := b.ResolveBatch(ctx(t), batch(1).ID); err != nil {
		t.Fatal(err)
	}
	if err := b.RecordCreated(ctx(t), batch(1).ID, "msgbatch_a", later); !errors.Is(err, llmfleet.ErrStale) {
		t.Fatalf("RecordCreated of a resolved batch: %v, want ErrStale", err)
	}
	// A batch whose owner's lease ended is recorded by whoever records it.
	addTo(t, b, pooled(2, "p"))
	if _, err := b.Claim(ctx(t), batch(2), "p", later, 1, 1<<40); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Heartbeat(ctx(t), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Heartbeat(ctx(t), time.Minute); err != nil { // a new owner
		t.Fatal(err)
	}
	if err := a.RecordCreated(ctx(t), batch(2).ID, "msgbatch_2", later); err != nil {
		t.Fatalf("RecordCreated of a batch whose owner's lease ended: %v", err)
	}
	if _, bs, err := b.Adopt(ctx(t)); err != nil || len(bs) != 0 {
		t.Errorf("Adopt of a batch recorded by a live process: %d batches, %v; want none", len(bs), err)
	}
	// A process records nothing while its own lease has ended; once
	// renewed, as a new owner, it records what it adopted of its ended run.
	addTo(t, a, pooled(3, "p"))
	if _, err := a.Claim(ctx(t), batch(3), "p", later, 1, 1<<40); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Heartbeat(ctx(t), 0); err != nil {
		t.Fatal(err)
	}
	if err := a.RecordCreated(ctx(t), batch(3).ID, "msgbatch_3", later); !errors.Is(err, llmfleet.ErrStale) {
		t.Fatalf("RecordCreated while the process's own lease has ended: %v, want ErrStale", err)
	}
	if _, err := a.Heartbeat(ctx(t), time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.Adopt(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if err := a.RecordCreated(ctx(t), batch(3).ID, "msgbatch_3", later); err != nil {
		t.Fatalf("RecordCreated of what the process adopted of its ended run: %v", err)
	}
}
