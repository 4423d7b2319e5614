package emulator

import (
	"bytes"
	"cmp"
	"encoding/json"
	"slices"
	"sort"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/cachesim"
)

// A batch's requests run at their own finish times (batchItem.done), in
// time order with every other request of the Server: on each request,
// advance first runs every batch request whose time has come, so that
// the prompt cache sees them, and the sync calls, in the order the
// provider would have.

// ranItem is a batch request that has run: its result, and the bill of
// a success.
type ranItem struct {
	result any
	bill   *Bill
}

// advance creates the late batches due by now, runs the batch requests
// due by now in order of their finish time, then ends every batch whose
// end time has come, in order of end time. The caller holds mu.
func (s *Server) advance(now time.Time) {
	s.land(now)
	s.runDue(now)
	st := s.st
	var due []*batch
	keep := st.pending[:0]
	for _, b := range st.pending {
		if !now.Before(b.end) {
			due = append(due, b)
		} else {
			keep = append(keep, b)
		}
	}
	clear(st.pending[len(keep):])
	st.pending = keep
	sort.Slice(due, func(i, j int) bool {
		if !due[i].end.Equal(due[j].end) {
			return due[i].end.Before(due[j].end)
		}
		return due[i].seq < due[j].seq
	})
	for _, b := range due {
		s.settle(b)
	}
}

// runDue runs the requests of the pending batches that finish by now (and
// by their batch's end: later ones are canceled or expired), in order of
// finish time, then of batch and of position. The caller holds mu.
func (s *Server) runDue(now time.Time) {
	type dueItem struct {
		b   *batch
		pos int // in b.order
	}
	var due []dueItem
	for _, b := range s.st.pending {
		limit := minTime(now, b.end)
		for pos := b.next; pos < len(b.order) && !b.items[b.order[pos]].done.After(limit); pos++ {
			due = append(due, dueItem{b, pos})
		}
	}
	slices.SortFunc(due, func(x, y dueItem) int {
		dx, dy := x.b.items[x.b.order[x.pos]].done, y.b.items[y.b.order[y.pos]].done
		if c := dx.Compare(dy); c != 0 {
			return c
		}
		return cmp.Or(cmp.Compare(x.b.seq, y.b.seq), cmp.Compare(x.pos, y.pos))
	})
	for _, d := range due {
		it := d.b.items[d.b.order[d.pos]]
		it.ran = s.runBatchItem(d.b, it)
		d.b.next = d.pos + 1
	}
}

// orderItems sets b.order, b's items by finish time.
func (b *batch) orderItems() {
	b.order = make([]int, len(b.items))
	for i := range b.order {
		b.order[i] = i
	}
	sort.SliceStable(b.order, func(i, j int) bool { return b.items[b.order[i]].done.Before(b.items[b.order[j]].done) })
}

// settle computes the results of a batch that has ended, from its
// requests that ran; the others are canceled or expired. The caller holds
// mu.
func (s *Server) settle(b *batch) {
	lines := make([][]byte, len(b.items))
	b.counts = llmfleet.RequestCounts{}
	for _, i := range b.order {
		it := b.items[i]
		var res any
		switch {
		case it.ran == nil && it.done.After(b.end) && !b.cancelAt.IsZero():
			res = map[string]string{"type": "canceled"}
			b.counts.Canceled++
		case it.ran == nil && it.done.After(b.end):
			res = map[string]string{"type": "expired"}
			b.counts.Expired++
		default:
			if it.ran == nil { // not seen by runDue: cannot happen, but answer it
				it.ran = s.runBatchItem(b, it)
			}
			res = it.ran.result
			switch res.(type) {
			case erroredResult:
				b.counts.Errored++
			case succeededResult:
				b.counts.Succeeded++
				s.st.stats.bills = append(s.st.stats.bills, *it.ran.bill)
			default:
				b.counts.Expired++
			}
		}
		line, err := json.Marshal(struct {
			CustomID string `json:"custom_id"`
			Result   any    `json:"result"`
		}{it.customID, res})
		if err != nil {
			panic(err)
		}
		lines[i] = line
	}
	r := s.rng("results", b.id)
	r.Shuffle(len(lines), func(i, j int) { lines[i], lines[j] = lines[j], lines[i] })
	var buf bytes.Buffer
	for _, l := range lines {
		buf.Write(l)
		buf.WriteByte('\n')
	}
	b.results = buf.Bytes()
	b.settled = true
	b.items, b.order = nil, nil // the results hold all that is left to serve
}

type succeededResult struct {
	Type    string      `json:"type"`
	Message messageJSON `json:"message"`
}

type erroredResult struct {
	Type  string          `json:"type"`
	Error json.RawMessage `json:"error"`
}

// runBatchItem answers one request of a batch at its finish time,
// through the batch route's prompt cache. The caller holds mu.
func (s *Server) runBatchItem(b *batch, it *batchItem) *ranItem {
	p, e := parseParams(it.params, modeBatch)
	if e == nil {
		e = s.checkModel(p.model)
	}
	if e == nil {
		d := parseDirectives(p.lastUserText())
		if d.expire {
			return &ranItem{result: map[string]string{"type": "expired"}}
		}
		if d.errorType != "" {
			e = directiveError(d.errorType)
		}
	}
	if e != nil {
		return &ranItem{result: erroredResult{Type: "errored", Error: envelope(e, s.requestIDLocked())}}
	}
	fp, _ := promptBlocks(p)
	rep := buildReply(p)
	rep.model = s.answerModel(p.model)
	in := s.useCache(b.key, cachesim.Batch, fp, it.done, s.rng("cache", "batch", b.id, it.customID))
	u := makeUsage(in, rep.outputTokens, "batch")
	bill := billOf(true, p, u)
	return &ranItem{result: succeededResult{Type: "succeeded", Message: rep.message(u)}, bill: &bill}
}
