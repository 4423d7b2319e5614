package dispatch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/llmfleet/llmfleet"
)

// This file lets a caller that gives a request id already accepted attach
// to that request instead of sending it again: the way an idempotent
// retry (the proxy's Idempotency-Key) is never paid twice. It works with
// a Store, whose ids outlive the process: the request may be waiting in
// this process (queued, in a batch, recovered after a restart) or be
// answered already, its result stored.

// requestIDs holds the requests waiting in this process by id, with a
// Store, so that a call giving an id already accepted attaches to it (it
// follows it) rather than send it again. Its map, and the waiters'
// followers, are guarded by the dispatcher's lock.
type requestIDs struct {
	d    *Dispatcher
	live map[string]*waiter
}

// follower is a caller attached to a request another call submitted.
type follower struct {
	reply   func(*llmfleet.Response, error)
	replied bool
	timer   llmfleet.Timer
	stopCtx func() bool
}

// answer replies to f once, once l (the dispatcher's lock, held) is
// released.
func (f *follower) answer(l *engineLock, resp *llmfleet.Response, err error) {
	if f.replied {
		return
	}
	f.replied = true
	if f.timer != nil {
		f.timer.Stop()
	}
	if f.stopCtx != nil {
		f.stopCtx()
	}
	l.later(func() { f.reply(resp, err) })
}

// storedAnswer returns the answer a stored result stands for.
func storedAnswer(sr *llmfleet.StoredRequest) (*llmfleet.Response, error) {
	if re := sr.Result.Err; re != nil {
		return nil, re.Error()
	}
	return &llmfleet.Response{Body: sr.Result.Body, Usage: sr.Result.Usage, Route: llmfleet.RouteBatch, RequestID: sr.ID,
		BatchID: sr.Result.BatchID}, nil
}

// errIDTaken is accept's answer for a request whose id another call has
// reserved since the caller looked.
var errIDTaken = errors.New("dispatch: request id taken")

// idConflict is the error of a request whose id names another request.
func idConflict(req *llmfleet.Request) error {
	return fmt.Errorf("%w: %s", llmfleet.ErrIDConflict, req.ID)
}

// attach answers reply from the request req.ID names, if there is one: it
// adds reply as a follower of the waiting request, or answers it at once
// from the stored result. It reports false when no request of that id is
// known, for the caller to accept req. A request of that id sent with
// another credential or another body is refused with
// llmfleet.ErrIDConflict.
func (r *requestIDs) attach(ctx context.Context, budget time.Duration, req *llmfleet.Request, reply func(*llmfleet.Response, error)) (bool, error) {
	d := r.d
	d.mu.Lock()
	ok, err := r.followLocked(ctx, budget, req, reply)
	d.mu.Unlock()
	if ok || err != nil {
		return true, err
	}
	sr, err := d.Store.GetRequest(ctx, req.ID)
	switch {
	case errors.Is(err, llmfleet.ErrNotFound):
		return false, nil
	case err != nil:
		return true, err
	case r.differs(req, sr.CredentialID, sr.Body):
		return true, idConflict(req)
	case sr.Result == nil:
		// Stored, not answered, yet not waiting here: accepted by a
		// call that has not finished accepting it, or not recoverable
		// (its credential cannot be unsealed). Look again in memory.
		d.mu.Lock()
		ok, err := r.followLocked(ctx, budget, req, reply)
		if !ok && err == nil && d.shared != nil && d.fleet.waitElsewhereLocked(sr, req.Credential) {
			// In another replica's hands: its answer is announced.
			ok, err = r.followLocked(ctx, budget, req, reply)
		}
		d.mu.Unlock()
		if !ok && err == nil {
			err = fmt.Errorf("%w (stored but not waiting in this process)", idConflict(req))
		}
		return true, err
	}
	reply(storedAnswer(sr))
	return true, nil
}

// followLocked attaches reply to the waiting request of req.ID, if any.
func (r *requestIDs) followLocked(ctx context.Context, budget time.Duration, req *llmfleet.Request, reply func(*llmfleet.Response, error)) (bool, error) {
	d := r.d
	w, ok := r.live[req.ID]
	if !ok {
		return false, nil
	}
	if r.differs(req, d.fingerprint(w.req.Credential), w.req.Body) {
		return true, idConflict(req)
	}
	f := &follower{reply: reply}
	w.followers = append(w.followers, f)
	if budget > 0 {
		missed := fmt.Errorf("%w (budget %s)", llmfleet.ErrBudgetExceeded, budget)
		f.timer = d.clock.AfterFunc(budget, func() {
			d.mu.Lock()
			defer d.mu.Unlock()
			f.answer(&d.mu, nil, missed)
		})
	}
	if ctx.Done() != nil {
		f.stopCtx = context.AfterFunc(ctx, func() {
			d.mu.Lock()
			defer d.mu.Unlock()
			f.answer(&d.mu, nil, ctx.Err())
		})
	}
	return true, nil
}

// reserveLocked makes w the request of its id in this process, unless
// another call reserved the id first; it reports whether it did.
func (r *requestIDs) reserveLocked(w *waiter) bool {
	if _, taken := r.live[w.id]; taken {
		return false
	}
	r.live[w.id] = w
	return true
}

// releaseLocked ends w's hold on its id and answers its followers.
func (r *requestIDs) releaseLocked(w *waiter, resp *llmfleet.Response, err error) {
	d := r.d
	if r.live[w.id] == w {
		delete(r.live, w.id)
	}
	for _, f := range w.followers {
		f.answer(&d.mu, resp, err)
	}
	w.followers = nil
}

// known reports whether a request of req.ID was accepted already (in
// this process or, with a Store, before), and refuses it with
// llmfleet.ErrIDConflict if that one was sent with another credential or
// body.
func (r *requestIDs) known(ctx context.Context, req *llmfleet.Request) (bool, error) {
	d := r.d
	d.mu.Lock()
	w, ok := r.live[req.ID]
	var credID string
	var body []byte
	if ok {
		credID, body = d.fingerprint(w.req.Credential), w.req.Body
	}
	d.mu.Unlock()
	if !ok {
		sr, err := d.Store.GetRequest(ctx, req.ID)
		if errors.Is(err, llmfleet.ErrNotFound) {
			return false, nil
		} else if err != nil {
			return true, err
		}
		credID, body = sr.CredentialID, sr.Body
	}
	if r.differs(req, credID, body) {
		return true, idConflict(req)
	}
	return true, nil
}

// differs reports whether req is not the request accepted under its id,
// sent with the credential of id credID and the body body.
func (r *requestIDs) differs(req *llmfleet.Request, credID string, body []byte) bool {
	d := r.d
	return credID != d.fingerprint(req.Credential) || !bytes.Equal(body, req.Body)
}
