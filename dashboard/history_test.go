package dashboard

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
)

var t0 = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

func ledgerEntry(at time.Duration, route llmfleet.Route, cost, other float64) llmfleet.LedgerEntry {
	return llmfleet.LedgerEntry{Time: t0.Add(at), Model: "m", Route: route, Outcome: "ok",
		CostUSD: cost, OtherRouteUSD: other, Priced: true}
}

func TestHistorySeries(t *testing.T) {
	h := &History{}
	h.Add(ledgerEntry(10*time.Second, llmfleet.RouteSync, 1, 0.5))
	b1 := ledgerEntry(70*time.Second, llmfleet.RouteBatch, 0.5, 1)
	b1.Turnaround = 5 * time.Minute
	b2 := ledgerEntry(75*time.Second, llmfleet.RouteBatch, 0.25, 0.5)
	b2.Turnaround = 5 * time.Minute // same batch: one turnaround point
	h.Add(b1)
	h.Add(b2)
	unpriced := ledgerEntry(190*time.Second, llmfleet.RouteBatch, 0, 0)
	unpriced.Priced = false
	h.Add(unpriced)

	s := h.Snapshot(t0.Add(4*time.Minute + 30*time.Second))
	if s.BucketSeconds != 60 || !s.Time.Equal(t0.Add(270*time.Second)) {
		t.Errorf("bucket %v time %v", s.BucketSeconds, s.Time)
	}
	wantTraffic := [][2]int64{{1, 0}, {0, 2}, {0, 0}, {0, 1}, {0, 0}}
	if len(s.Traffic) != len(wantTraffic) {
		t.Fatalf("traffic %+v", s.Traffic)
	}
	for i, w := range wantTraffic {
		p := s.Traffic[i]
		if !p.Time.Equal(t0.Add(time.Duration(i)*time.Minute)) || p.SyncCalls != w[0] || p.BatchedCalls != w[1] {
			t.Errorf("traffic[%d] = %+v, want %v", i, p, w)
		}
	}
	// Cumulated: 1 paid / 1 at sync after the first minute, then 1.75 / 2.5.
	want := []struct {
		at           time.Duration
		cost, syncEq float64
	}{{0, 0, 0}, {time.Minute, 1, 1}, {2 * time.Minute, 1.75, 2.5}, {3 * time.Minute, 1.75, 2.5},
		{4 * time.Minute, 1.75, 2.5}, {270 * time.Second, 1.75, 2.5}}
	if len(s.Savings) != len(want) {
		t.Fatalf("savings %+v", s.Savings)
	}
	for i, w := range want {
		p := s.Savings[i]
		if !p.Time.Equal(t0.Add(w.at)) || p.CostUSD != w.cost || p.SyncEquivalentUSD != w.syncEq || p.SavedUSD != w.syncEq-w.cost {
			t.Errorf("savings[%d] = %+v, want %+v", i, p, w)
		}
	}
	if tp := s.Turnaround["m"]; len(tp) != 1 || tp[0].Seconds != 300 || !tp[0].Time.Equal(t0.Add(70*time.Second)) {
		t.Errorf("turnaround %+v", s.Turnaround)
	}
	// Explicit turnarounds are never merged.
	h.AddTurnaround("m", t0.Add(5*time.Minute), 5*time.Minute)
	if tp := h.Snapshot(t0.Add(5 * time.Minute)).Turnaround["m"]; len(tp) != 2 {
		t.Errorf("explicit turnaround not added: %+v", tp)
	}
}

func TestHistoryWindow(t *testing.T) {
	h := &History{Points: 3}
	for i := range 5 {
		h.Add(ledgerEntry(time.Duration(i)*time.Minute, llmfleet.RouteBatch, 1, 2))
	}
	h.Add(ledgerEntry(0, llmfleet.RouteBatch, 1, 2)) // older than every bucket kept
	s := h.Snapshot(t0.Add(4*time.Minute + 30*time.Second))
	if len(s.Traffic) != 3 || !s.Traffic[0].Time.Equal(t0.Add(2*time.Minute)) {
		t.Fatalf("traffic %+v", s.Traffic)
	}
	// Before the window: 3 paid, 6 at sync; then one more of each per minute.
	for i, w := range [][2]float64{{3, 6}, {4, 8}, {5, 10}, {6, 12}} {
		if p := s.Savings[i]; p.CostUSD != w[0] || p.SyncEquivalentUSD != w[1] {
			t.Errorf("savings[%d] = %+v, want %v", i, p, w)
		}
	}
	// Long after the last entry the window follows now; the old money stays.
	s = h.Snapshot(t0.Add(time.Hour))
	if len(s.Traffic) != 3 || !s.Traffic[2].Time.Equal(t0.Add(time.Hour)) || s.Traffic[2].BatchedCalls != 0 {
		t.Errorf("traffic an hour later: %+v", s.Traffic)
	}
	if first, last := s.Savings[0], s.Savings[len(s.Savings)-1]; first.CostUSD != 6 || last.SyncEquivalentUSD != 12 {
		t.Errorf("savings an hour later: %+v ... %+v", first, last)
	}
}

func TestHistoryQueueSamples(t *testing.T) {
	h := &History{Samples: 3}
	h.SampleQueue(t0, 1, 0)
	h.SampleQueue(t0.Add(500*time.Millisecond), 2, 0) // replaces the previous
	for i := 1; i <= 3; i++ {
		h.SampleQueue(t0.Add(time.Duration(i)*time.Second), int64(10*i), 1)
	}
	q := h.Snapshot(t0.Add(4 * time.Second)).Queue
	if len(q) != 3 || q[0].QueueDepth != 10 || q[2].QueueDepth != 30 || q[2].BatchesInFlight != 1 {
		t.Errorf("queue %+v", q)
	}
	h = &History{}
	h.SampleQueue(t0, 1, 0)
	h.SampleQueue(t0.Add(200*time.Millisecond), 2, 0)
	if q := h.Snapshot(t0).Queue; len(q) != 1 || q[0].QueueDepth != 2 {
		t.Errorf("collapsed samples %+v", q)
	}
}

type fixedClock struct{ now time.Time }

func (c fixedClock) Now() time.Time { return c.now }
func (c fixedClock) AfterFunc(d time.Duration, f func()) llmfleet.Timer {
	panic("not used")
}

func TestSource(t *testing.T) {
	now := t0.Add(10 * time.Minute)
	h := &History{}
	h.Add(ledgerEntry(time.Minute, llmfleet.RouteBatch, 1, 2))
	src := &Source{
		History: h,
		Clock:   fixedClock{now},
		Stats:   func() llmfleet.Stats { return llmfleet.Stats{QueueDepth: 4, BatchesInFlight: 2} },
		InFlight: func(ctx context.Context) ([]BatchInFlight, error) {
			return []BatchInFlight{{ID: "b2", Since: now.Add(-time.Minute)}, {ID: "b1", Since: now.Add(-time.Hour)}}, nil
		},
	}
	s, err := src.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if s.Stats.QueueDepth != 4 || len(s.Queue) != 0 { // the Sampler samples the queue, not snapshots
		t.Errorf("stats %+v queue %+v", s.Stats, s.Queue)
	}
	if len(s.BatchesInFlight) != 2 || s.BatchesInFlight[0].ID != "b1" || s.BatchesInFlight[0].AgeSeconds != 3600 || s.BatchesInFlight[1].AgeSeconds != 60 {
		t.Errorf("in flight %+v", s.BatchesInFlight)
	}
	if len(s.Traffic) != 10 {
		t.Errorf("traffic %d points", len(s.Traffic))
	}
	src.InFlight = func(ctx context.Context) ([]BatchInFlight, error) { return nil, errors.New("store closed") }
	if _, err := src.Snapshot(context.Background()); err == nil {
		t.Error("InFlight error not returned")
	}
	s, err = (&Source{}).Snapshot(context.Background())
	if err != nil || s.Savings == nil || s.Traffic == nil || s.Queue == nil || s.Turnaround == nil || s.BatchesInFlight == nil {
		t.Errorf("zero Source: %+v %v", s, err)
	}
}

func TestInFlightFromPending(t *testing.T) {
	got := InFlightFromPending([]*llmfleet.PendingBatch{
		{Batch: llmfleet.StoredBatch{ID: "lfb_1", UpstreamID: "msgbatch_1", Provider: "anthropic", State: llmfleet.BatchCreated,
			Size: 3, IntentAt: t0, CreatedAt: t0.Add(time.Second)},
			Requests: []*llmfleet.StoredRequest{{Model: "b"}, {Model: "a"}, {Model: "b"}}},
		{Batch: llmfleet.StoredBatch{ID: "lfb_2", State: llmfleet.BatchIntent, IntentAt: t0.Add(time.Minute)},
			Requests: []*llmfleet.StoredRequest{{Model: "a"}}},
		nil,
	})
	if len(got) != 2 {
		t.Fatalf("%+v", got)
	}
	if b := got[0]; b.ID != "lfb_1" || b.UpstreamID != "msgbatch_1" || b.Size != 3 || len(b.Models) != 2 || b.Models[0] != "a" ||
		!b.Since.Equal(t0.Add(time.Second)) || b.State != "created" {
		t.Errorf("created batch %+v", b)
	}
	if b := got[1]; b.Size != 1 || !b.Since.Equal(t0.Add(time.Minute)) || b.State != "intent" {
		t.Errorf("intent batch %+v", b)
	}
}
