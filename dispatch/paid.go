package dispatch

import (
	"sync"

	"github.com/llmfleet/llmfleet"
)

// paidLedger records the ledger entries that complete no request: calls
// paid apart from their request's answer (an answer that came second, a
// rescue's call cut after it was sent). It writes them at once or, when
// the store cannot take them now, keeps them in memory and writes them
// from one goroutine of the dispatcher's, again and again (waiting
// Policy.RetryAfter between tries), in the order they came, until the
// store takes them or the dispatcher closes. It owns those entries, under
// a lock of its own that it never calls out with.
type paidLedger struct {
	d *Dispatcher

	mu      sync.Mutex
	pending [][]llmfleet.LedgerEntry // not stored yet, one write each
	writing bool                     // its goroutine runs
}

// late records answers that came second as paid, not delivered, at the
// route they came by.
func (p *paidLedger) late(answers []answer) {
	now := p.d.clock.Now()
	entries := make([]llmfleet.LedgerEntry, 0, len(answers))
	for _, a := range answers {
		if a.resp == nil {
			continue // an error is not billed
		}
		e := p.d.answers.entry(a.w, a.resp, nil, now, llmfleet.RescueLate)
		e.Budget, e.BudgetMet = 0, true // its request is judged by the answer it got
		entries = append(entries, e)
	}
	p.record(entries)
}

// record records entries of calls paid apart from their request's
// answer, and hands them to Observe (no lock held).
func (p *paidLedger) record(entries []llmfleet.LedgerEntry) {
	if len(entries) == 0 {
		return
	}
	p.store(entries)
	if observe := p.d.Observe; observe != nil {
		durable := p.d.journal.durable()
		for _, e := range entries {
			observe(e, durable)
		}
	}
}

// store writes entries now or, if the store cannot take them now, keeps
// them for its goroutine to write once it can.
func (p *paidLedger) store(entries []llmfleet.LedgerEntry) {
	if p.write(entries) {
		return
	}
	p.mu.Lock()
	p.pending = append(p.pending, entries)
	start := !p.writing
	p.writing = true
	p.mu.Unlock()
	if start {
		p.d.work.begin()
		p.d.work.run(p.drain)
	}
}

// drain writes the entries kept, oldest first, until none is left or the
// dispatcher closes.
func (p *paidLedger) drain() {
	defer p.d.work.end()
	for n := 0; ; {
		p.mu.Lock()
		if len(p.pending) == 0 {
			p.writing = false
			p.mu.Unlock()
			return
		}
		entries := p.pending[0]
		p.mu.Unlock()
		if p.write(entries) {
			p.mu.Lock()
			p.pending = p.pending[1:]
			p.mu.Unlock()
			n = 0
			continue
		}
		if llmfleet.Sleep(p.d.ctx, p.d.clock, p.d.pol.RetryAfter(n)) != nil {
			p.mu.Lock()
			p.writing = false
			p.mu.Unlock()
			return
		}
		n++
	}
}

// write writes entries; false if the store did not take them.
func (p *paidLedger) write(entries []llmfleet.LedgerEntry) bool {
	err := p.d.journal.ledger(p.d.ctx, entries)
	if err != nil {
		p.d.log.Warn("ledger entries not stored; will retry", "entries", len(entries), "err", err)
	}
	return err == nil
}
