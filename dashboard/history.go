package dashboard

import (
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/ledger"
)

// History accumulates the dashboard's time series in memory, bounded in
// size. The zero value is ready to use; it is safe for concurrent use and
// its methods are quick, so that it can be fed from the dispatcher's
// Observe hook.
type History struct {
	// Bucket is the width of one point of the savings and traffic series;
	// 0 means a minute. Points is how many buckets are kept; 0 means 240.
	// Samples is how many queue samples and turnarounds per model are
	// kept; 0 means 360. Set them before first use.
	Bucket  time.Duration
	Points  int
	Samples int

	mu      sync.Mutex
	base    bucket            // sums of the buckets dropped so far
	buckets []bucket          // by start, oldest first
	queue   []QueuePoint      // oldest first
	turn    map[string]*turns // by model
}

// bucket sums the entries of one time bucket.
type bucket struct {
	start time.Time
	money
	syncCalls, flexCalls, batchd int64
}

// money sums what entries cost: paid (cost), at the sync route
// (ledger.SyncEquivalent), their routing misses (miss) and those of them
// their saving does not count (ledger.MissNotInSaving).
type money struct {
	cost, syncEq, miss, notInSaving float64
}

func (m *money) add(o money) {
	m.cost += o.cost
	m.syncEq += o.syncEq
	m.miss += o.miss
	m.notInSaving += o.notInSaving
}

// point returns the savings point of the sums at t.
func (m money) point(t time.Time) SavingsPoint {
	saved := m.syncEq - m.cost
	r := ledger.RoundUSD // sums of prices: no float noise on the page
	return SavingsPoint{Time: t, CostUSD: r(m.cost), SyncEquivalentUSD: r(m.syncEq), SavedUSD: r(saved),
		RoutingMissUSD: r(m.miss), NetSavedUSD: r(saved - m.notInSaving)}
}

// turns holds one model's recent turnarounds and, to count a batch once,
// the turnarounds already seen.
type turns struct {
	points []TurnaroundPoint
	seen   []time.Duration // ring of recent values
	next   int
}

func (h *History) bucketWidth() time.Duration {
	if h.Bucket > 0 {
		return h.Bucket
	}
	return time.Minute
}

func (h *History) points() int {
	if h.Points > 0 {
		return h.Points
	}
	return 240
}

func (h *History) samples() int {
	if h.Samples > 0 {
		return h.Samples
	}
	return 360
}

// Add counts a ledger entry (costs filled in) in the savings and traffic
// series, as the ledger's Summary counts it: what was paid, what it would
// have cost at the sync route (ledger.SyncEquivalent), the routing misses
// and the net saving. A batched entry also adds its batch's turnaround to the model's
// series, once per batch: the entries of one batch carry the same
// turnaround, and a value seen recently for the model is not added again.
func (h *History) Add(e llmfleet.LedgerEntry) {
	h.mu.Lock()
	defer h.mu.Unlock()
	start := e.Time.Truncate(h.bucketWidth())
	i := sort.Search(len(h.buckets), func(i int) bool { return !h.buckets[i].start.Before(start) })
	var b *bucket
	switch {
	case i < len(h.buckets) && h.buckets[i].start.Equal(start):
		b = &h.buckets[i]
	case i == 0 && len(h.buckets) >= h.points():
		b = &h.base // older than everything kept
	default:
		h.buckets = slices.Insert(h.buckets, i, bucket{start: start})
		b = &h.buckets[i]
	}
	switch e.Route {
	case llmfleet.RouteBatch:
		b.batchd++
	case llmfleet.RouteFlex:
		b.flexCalls++
	default:
		b.syncCalls++
	}
	b.miss += e.MissUSD
	if e.Priced {
		b.cost += e.CostUSD
		b.syncEq += ledger.SyncEquivalent(e)
		b.notInSaving += ledger.MissNotInSaving(e)
	}
	for len(h.buckets) > h.points() {
		h.base.add(h.buckets[0].money)
		h.buckets = h.buckets[1:]
	}
	if e.Route == llmfleet.RouteBatch && e.Turnaround > 0 {
		h.addTurnaround(e.Model, e.Time, e.Turnaround, true)
	}
}

// AddTurnaround adds the turnaround of a batch of a model that ended at
// the given time. Use it when batch ends are known directly; Add already
// derives turnarounds from ledger entries.
func (h *History) AddTurnaround(model string, at time.Time, d time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.addTurnaround(model, at, d, false)
}

func (h *History) addTurnaround(model string, at time.Time, d time.Duration, dedupe bool) {
	if h.turn == nil {
		h.turn = map[string]*turns{}
	}
	t := h.turn[model]
	if t == nil {
		t = &turns{seen: make([]time.Duration, 0, 64)}
		h.turn[model] = t
	}
	if dedupe {
		if slices.Contains(t.seen, d) {
			return
		}
		if len(t.seen) < cap(t.seen) {
			t.seen = append(t.seen, d)
		} else {
			t.seen[t.next] = d
			t.next = (t.next + 1) % len(t.seen)
		}
	}
	t.points = append(t.points, TurnaroundPoint{Time: ms(at), Seconds: d.Seconds()})
	if n := h.samples(); len(t.points) > n {
		t.points = slices.Delete(t.points, 0, len(t.points)-n)
	}
}

// SampleQueue records the queue depth and batches in flight at a time. A
// sample less than a second after the previous one replaces it.
func (h *History) SampleQueue(at time.Time, queueDepth, batchesInFlight int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	p := QueuePoint{Time: ms(at), QueueDepth: queueDepth, BatchesInFlight: batchesInFlight}
	if n := len(h.queue); n > 0 && p.Time.Sub(h.queue[n-1].Time) < time.Second {
		if !p.Time.Before(h.queue[n-1].Time) {
			h.queue[n-1] = p
		}
		return
	}
	h.queue = append(h.queue, p)
	if n := h.samples(); len(h.queue) > n {
		h.queue = slices.Delete(h.queue, 0, len(h.queue)-n)
	}
}

// Snapshot returns the series as of now; the caller fills in Stats and
// BatchesInFlight. Buckets without traffic between the first kept and now
// are filled in, so that the series are evenly spaced. Savings has one
// point more than Traffic: it starts with the sums before the first bucket.
func (h *History) Snapshot(now time.Time) Snapshot {
	h.mu.Lock()
	defer h.mu.Unlock()
	width := h.bucketWidth()
	s := Snapshot{
		Time:          ms(now),
		BucketSeconds: width.Seconds(),
		Savings:       []SavingsPoint{},
		Traffic:       []TrafficPoint{},
		Queue:         slices.Clone(h.queue),
		Turnaround:    make(map[string][]TurnaroundPoint, len(h.turn)),
	}
	if s.Queue == nil {
		s.Queue = []QueuePoint{}
	}
	for model, t := range h.turn {
		s.Turnaround[model] = slices.Clone(t.points)
	}
	if len(h.buckets) == 0 {
		return s
	}
	last := now.Truncate(width)
	if end := h.buckets[len(h.buckets)-1].start; end.After(last) {
		last = end
	}
	first := h.buckets[0].start
	if n := h.points(); last.Sub(first) >= time.Duration(n)*width {
		first = last.Add(-time.Duration(n-1) * width)
	}
	sum := h.base.money
	j := 0
	for ; j < len(h.buckets) && h.buckets[j].start.Before(first); j++ {
		sum.add(h.buckets[j].money) // before the window: only its money counts
	}
	// The savings series starts with what had been spent before the window.
	s.Savings = append(s.Savings, sum.point(ms(first)))
	for t := first; !t.After(last); t = t.Add(width) {
		var b bucket
		if j < len(h.buckets) && h.buckets[j].start.Equal(t) {
			b = h.buckets[j]
			j++
		}
		sum.add(b.money)
		end := t.Add(width)
		if end.After(now) && !t.After(now) {
			end = now // the bucket under way ends now
		}
		end = ms(end)
		s.Savings = append(s.Savings, sum.point(end))
		s.Traffic = append(s.Traffic, TrafficPoint{Time: ms(t), SyncCalls: b.syncCalls, FlexCalls: b.flexCalls, BatchedCalls: b.batchd})
	}
	return s
}
