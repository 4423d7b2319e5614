package dispatch

import "sync"

// workGroup is the dispatcher's account of the work under way (creates,
// reconciliations, batches in flight, rescues, answers whose storing is
// retried), which Close waits for, and the runner of its goroutines,
// which go through the Go hook and which Close waits for too. It owns its
// count, its idle signal and its WaitGroup, under a lock of its own that
// it never calls out with; it may be used with or without the engine's
// lock held. The zero value is ready (goHook nil: go f()).
type workGroup struct {
	goHook func(func()) // Dispatcher.Go
	wg     sync.WaitGroup

	mu   sync.Mutex
	n    int
	idle chan struct{} // closed and replaced when n drops to zero
}

// begin counts one piece of work under way.
func (g *workGroup) begin() {
	g.mu.Lock()
	g.n++
	g.mu.Unlock()
}

// end counts one piece of work as done.
func (g *workGroup) end() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n--
	if g.n == 0 && g.idle != nil {
		close(g.idle)
		g.idle = nil
	}
}

// busy reports whether work is under way and, if so, a channel closed
// once none is.
func (g *workGroup) busy() (bool, <-chan struct{}) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.n == 0 {
		return false, nil
	}
	if g.idle == nil {
		g.idle = make(chan struct{})
	}
	return true, g.idle
}

// run runs f in a goroutine of the dispatcher's (through the Go hook, if
// set), which wait waits for.
func (g *workGroup) run(f func()) {
	g.wg.Add(1)
	run := func() {
		defer g.wg.Done()
		f()
	}
	if g.goHook != nil {
		g.goHook(run)
		return
	}
	go run()
}

// wait waits for the goroutines run started.
func (g *workGroup) wait() { g.wg.Wait() }
