package dashboard

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmfleet/llmfleet"
)

// The sampler samples the queue every interval with no page open, stops
// at Close, and a period without samples is left as a gap.
func TestSamplerSamplesWithoutAPage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var depth atomic.Int64
		h := &History{}
		s := &Sampler{History: h, Interval: 5 * time.Second,
			Stats: func() llmfleet.Stats { return llmfleet.Stats{QueueDepth: depth.Load(), BatchesInFlight: 2} }}
		if err := s.Open(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second) // values change between samples
		for i := range 4 {
			depth.Store(int64(10 * (i + 1)))
			time.Sleep(5 * time.Second)
		}
		synctest.Wait()
		snap := h.Snapshot(time.Now())
		if len(snap.Queue) != 5 {
			t.Fatalf("%d samples after 21s at 5s, want 5: %+v", len(snap.Queue), snap.Queue)
		}
		for i, p := range snap.Queue {
			if want := int64(10 * i); p.QueueDepth != want || p.BatchesInFlight != 2 {
				t.Errorf("sample %d: %+v, want depth %d, 2 in flight", i, p, want)
			}
			if i > 0 {
				if d := p.Time.Sub(snap.Queue[i-1].Time); d != 5*time.Second {
					t.Errorf("sample %d: %v after the previous, want 5s", i, d)
				}
			}
		}
		s.Close()
		time.Sleep(time.Minute)
		synctest.Wait()
		if n := len(h.Snapshot(time.Now()).Queue); n != 5 {
			t.Fatalf("%d samples after Close, want still 5", n)
		}
		// Opened again (a restart): sampling resumes after a gap of a
		// minute, which the series shows as such (no sample in between).
		if err := s.Open(); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		q := h.Snapshot(time.Now()).Queue
		if len(q) != 6 || q[5].Time.Sub(q[4].Time) < time.Minute {
			t.Fatalf("after reopening: %+v", q)
		}
		s.Close()
		s.Close() // twice is fine
	})
}

// A snapshot no longer samples the queue: only the sampler does.
func TestSnapshotDoesNotSample(t *testing.T) {
	h := &History{}
	src := &Source{History: h, Stats: func() llmfleet.Stats { return llmfleet.Stats{QueueDepth: 3} }}
	snap, err := src.Snapshot(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Queue) != 0 || snap.Stats.QueueDepth != 3 {
		t.Fatalf("snapshot queue %+v stats %+v", snap.Queue, snap.Stats)
	}
}
