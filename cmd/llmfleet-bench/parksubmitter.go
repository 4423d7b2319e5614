package main

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmfleet/llmfleet"
)

// parkingSubmitter routes every request to the batch route and holds it
// until its caller leaves (SubmitBatch) or until release
// (SubmitBatchFunc, whose callers the proxy parks on their connections).
type parkingSubmitter struct {
	active atomic.Int64
	mu     sync.Mutex
	held   []heldRequest
}

// heldRequest is a request parkingSubmitter holds for SubmitBatchFunc.
type heldRequest struct {
	req  *llmfleet.Request
	done func(*llmfleet.Response, error)
}

func (p *parkingSubmitter) SubmitBatchFunc(_ context.Context, _ time.Duration, req *llmfleet.Request, done func(*llmfleet.Response, error)) error {
	p.mu.Lock()
	p.held = append(p.held, heldRequest{req, done})
	p.mu.Unlock()
	p.active.Add(1)
	return nil
}

// release answers every request held for SubmitBatchFunc with
// llmfleet.ErrClosed.
func (p *parkingSubmitter) release() {
	p.mu.Lock()
	held := p.held
	p.held = nil
	p.mu.Unlock()
	for _, h := range held {
		h.done(nil, llmfleet.ErrClosed)
		p.active.Add(-1)
	}
}

func (p *parkingSubmitter) Submit(ctx context.Context, budget time.Duration, req *llmfleet.Request) (*llmfleet.Response, error) {
	return p.SubmitBatch(ctx, budget, req)
}

func (p *parkingSubmitter) SubmitSync(context.Context, *llmfleet.Request) (*llmfleet.Response, error) {
	return nil, errors.New("bench: the parking Submitter has no sync route")
}

func (p *parkingSubmitter) SubmitBatch(ctx context.Context, _ time.Duration, req *llmfleet.Request) (*llmfleet.Response, error) {
	p.active.Add(1)
	defer p.active.Add(-1)
	<-ctx.Done()
	runtime.KeepAlive(req)
	return nil, ctx.Err()
}

func (p *parkingSubmitter) Plan(time.Duration, *llmfleet.Request) llmfleet.Route {
	return llmfleet.RouteBatch
}

func (p *parkingSubmitter) Stats() llmfleet.Stats { return llmfleet.Stats{} }
