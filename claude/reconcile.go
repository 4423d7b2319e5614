package claude

import (
	"context"
	"fmt"
	"time"

	"github.com/llmfleet/llmfleet"
)

// Reconciliation bounds.
const (
	reconcilePageSize = 100
	reconcileMaxPages = 20
	reconcileRounds   = 5
	handedOutTTL      = 25 * time.Hour
)

// createCall is one CreateBatch call, tracked so that reconciliation never
// adopts a batch another create of this Provider made.
type createCall struct {
	n         int       // number of requests
	sentAt    time.Time // when its latest attempt started
	inflight  bool      // an attempt is under way
	idle      chan struct{}
	ambiguous bool // an attempt failed after it was sent and is unresolved
	finished  bool
}

func (p *Provider) startCreate(n int) *createCall {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.creates == nil {
		p.creates = make(map[*createCall]struct{})
		p.handedOut = make(map[string]time.Time)
	}
	now := p.now()
	for id, at := range p.handedOut {
		if now.Sub(at) > handedOutTTL {
			delete(p.handedOut, id)
		}
	}
	for c := range p.creates {
		if c.finished && now.Sub(c.sentAt) > 2*p.skew()+time.Hour {
			delete(p.creates, c)
		}
	}
	c := &createCall{n: n, idle: make(chan struct{})}
	close(c.idle)
	p.creates[c] = struct{}{}
	return c
}

// setSentAt marks the start of an attempt of c and returns its time.
func (p *Provider) setSentAt(c *createCall) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	c.sentAt = p.now()
	if !c.inflight {
		c.inflight = true
		c.idle = make(chan struct{})
	}
	return c.sentAt
}

// settle marks the end of c's current attempt.
func (p *Provider) settle(c *createCall) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.settleLocked(c)
}

func (p *Provider) settleLocked(c *createCall) {
	if c.inflight {
		c.inflight = false
		close(c.idle)
	}
}

// markAmbiguous marks c as having made a batch whose id is unknown.
func (p *Provider) markAmbiguous(c *createCall) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c.ambiguous = true
}

// finishCreate ends c, recording id (if any) as handed out. An unresolved
// ambiguous call is kept for a while: its batch may exist and must not be
// mistaken for another create's.
func (p *Provider) finishCreate(c *createCall, id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if id != "" {
		p.handedOut[id] = p.now()
		c.ambiguous = false
	}
	p.settleLocked(c)
	c.finished = true
	if !c.ambiguous {
		delete(p.creates, c)
	}
}

// busyPeersLocked returns the idle channels of the other creates of the same
// size that have an attempt under way.
func (p *Provider) busyPeersLocked(self *createCall) []chan struct{} {
	var chs []chan struct{}
	for c := range p.creates {
		if c != self && c.n == self.n && c.inflight {
			chs = append(chs, c.idle)
		}
	}
	return chs
}

// reconcile finds out whether the ambiguous create self, of n requests sent
// at sentAt, made a batch. It returns the batch, or nil if the provider's
// list proves there is none, or an error if it cannot tell.
func (p *Provider) reconcile(ctx context.Context, self *createCall, cred llmfleet.Credential, sentAt time.Time, n int) (*llmfleet.Batch, error) {
	p.mu.Lock()
	self.ambiguous = true
	p.settleLocked(self)
	p.mu.Unlock()

	if err := p.sleep(ctx, p.reconcileDelay()); err != nil {
		return nil, err
	}
	skew := p.skew()
	since := sentAt.Add(-skew)
	for range reconcileRounds {
		p.mu.Lock()
		busy := p.busyPeersLocked(self)
		p.mu.Unlock()
		if len(busy) > 0 && p.testHookReconcileWait != nil {
			p.testHookReconcileWait()
		}
		for _, ch := range busy {
			select {
			case <-ch:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}

		recent, complete, err := p.listSince(ctx, cred, since)
		if err != nil {
			return nil, fmt.Errorf("listing batches: %w", err)
		}

		p.mu.Lock()
		if len(p.busyPeersLocked(self)) > 0 {
			// Another create started meanwhile; its batch may be listed
			// but not handed out yet.
			p.mu.Unlock()
			continue
		}
		var cands []llmfleet.Batch
		for _, b := range recent {
			if _, mine := p.handedOut[b.ID]; !mine && b.Counts.Total() == n {
				cands = append(cands, b)
			}
		}
		others := 0
		for c := range p.creates {
			if c != self && c.n == n && c.ambiguous && !c.sentAt.Before(sentAt.Add(-2*skew)) {
				others++
			}
		}
		switch {
		case len(cands) == 1 && others == 0:
			p.handedOut[cands[0].ID] = p.now()
			self.ambiguous = false
			p.mu.Unlock()
			return &cands[0], nil
		case len(cands) == 0 && complete:
			self.ambiguous = false
			p.mu.Unlock()
			return nil, nil
		}
		p.mu.Unlock()
		switch {
		case len(cands) == 0:
			return nil, fmt.Errorf("the batch list is longer than %d batches since %s", reconcilePageSize*reconcileMaxPages, since.Format(time.RFC3339))
		case others > 0:
			return nil, fmt.Errorf("%d candidate batches of %d requests, and %d other ambiguous creates of that size", len(cands), n, others)
		default:
			return nil, fmt.Errorf("%d candidate batches of %d requests created since %s", len(cands), n, since.Format(time.RFC3339))
		}
	}
	return nil, fmt.Errorf("other creates of %d requests kept starting", n)
}

// listSince lists the credential's batches created at or after since. It
// reports whether it saw the whole range.
func (p *Provider) listSince(ctx context.Context, cred llmfleet.Credential, since time.Time) ([]llmfleet.Batch, bool, error) {
	var out []llmfleet.Batch
	after := ""
	for range reconcileMaxPages {
		page, err := p.ListBatches(ctx, cred, after, reconcilePageSize)
		if err != nil {
			return nil, false, err
		}
		older := false
		for _, b := range page.Batches {
			if b.CreatedAt.Before(since) {
				older = true
				continue
			}
			out = append(out, b)
		}
		if older || !page.HasMore || len(page.Batches) == 0 {
			return out, true, nil
		}
		after = page.LastID
	}
	return out, false, nil
}
