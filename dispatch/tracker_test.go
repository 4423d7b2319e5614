package dispatch

import (
	"testing"

	"github.com/llmfleet/llmfleet"
)

// TestStatsBeforeOpen: Stats and InFlight may be read before Open (a
// dashboard samples them from its start), and read nothing in flight.
func TestStatsBeforeOpen(t *testing.T) {
	d := &Dispatcher{Providers: []llmfleet.Provider{newFake()}}
	if s := d.Stats(); s.BatchesInFlight != 0 {
		t.Fatalf("batches in flight before Open: %d", s.BatchesInFlight)
	}
	if fl := d.InFlight(); len(fl) != 0 {
		t.Fatalf("in flight before Open: %v", fl)
	}
}
