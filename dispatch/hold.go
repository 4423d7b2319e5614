package dispatch

// Answers in hand that could not be stored yet, and the work that must
// be done again until the store takes it. A result is stored before its
// caller is answered, but an answer that the store cannot take now is
// not thrown away: it is held, its recording tried again until it is
// done, and its caller answered from it when the budget needs it (at
// once for an answer of the sync route, at the request's rescue time for
// a batch's result), rather than pay for the request again.

import "github.com/llmfleet/llmfleet"

// hold keeps a, an answer not stored yet, with its waiter; with now, its
// caller is answered from it at once.
func (an *answerer) hold(a answer, now bool) {
	d := an.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if a.w.state == stateDone {
		return
	}
	held := a
	a.w.held = &held
	if now {
		an.replyHeldLocked(a.w)
	}
}

// replyHeldLocked answers w's caller from its answer in hand; false if it
// has none.
func (an *answerer) replyHeldLocked(w *waiter) bool {
	d := an.d
	if w.held == nil {
		return false
	}
	if !w.replied && w.reply != nil && !w.abandoned {
		d.log.Info("answering a caller from its answer in hand; its recording is retried", "request_id", w.id)
		w.heldAt = d.clock.Now()
	}
	an.replyLocked(w, w.held.resp, w.held.err)
	return true
}

// retry runs f in a goroutine of the dispatcher's, again and again
// (waiting Policy.RetryAfter between tries) until it reports that it did
// its work, or the dispatcher closes. Close waits for it until its
// context ends.
func (an *answerer) retry(f func() bool) {
	d := an.d
	d.work.begin()
	d.work.run(func() {
		defer d.work.end()
		for n := 0; !f(); n++ {
			if llmfleet.Sleep(d.ctx, d.clock, d.pol.RetryAfter(n)) != nil {
				return
			}
		}
	})
}
