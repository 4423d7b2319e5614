package dispatch

import "sync"

// engineLock is the dispatcher's lock, with an outbox: what must not run
// while it is held (the embedding application's hooks, such as Observe,
// and callers' answers: a SubmitFunc's done, a follower's reply) is
// queued with later while it is held, and made by Unlock once the lock is
// released, in the order it was queued, by the goroutine that held it. So
// a hook that blocks, or that calls back into the Dispatcher, holds up
// only its own goroutine, never the engine.
type engineLock struct {
	mu  sync.Mutex
	out []func() // queued while held; guarded by mu
}

// Lock takes the lock.
func (l *engineLock) Lock() { l.mu.Lock() }

// Unlock releases the lock, then makes the calls queued while it was
// held.
func (l *engineLock) Unlock() {
	out := l.out
	l.out = nil
	l.mu.Unlock()
	for _, f := range out {
		f()
	}
}

// later queues f, to be called once the lock is released. The lock must
// be held.
func (l *engineLock) later(f func()) { l.out = append(l.out, f) }
