package proxy

import (
	"net/http"
	"sync"
	"time"

	"github.com/llmfleet/llmfleet"
)

// streamShape is how a face keeps a streaming caller waiting.
type streamShape struct {
	// eager sends the stream's status and headers at once; else they go
	// out with the first ping, so that a result arriving before it is
	// answered exactly as the sync API would.
	eager bool
	// ping appends to b the bytes sent every interval while the caller
	// waits.
	ping func(b []byte) []byte
	// begin sets the stream's headers; trailer says the batch id header
	// is to be declared as a trailer, set once it is known.
	begin func(h http.Header, trailer bool)
}

// streamPark keeps a streaming caller's connection alive while its
// batched request waits: every interval it sends the face's ping, the
// first one preceded by the 200 status and the stream's headers unless
// they went out at once. It holds no goroutine while waiting, only a
// timer.
type streamPark struct {
	w        http.ResponseWriter
	rc       *http.ResponseController
	clock    llmfleet.Clock
	interval time.Duration
	shape    streamShape

	mu     sync.Mutex
	begun  bool
	done   bool
	timer  llmfleet.Timer
	failed bool // a write failed: the caller is gone
}

// newStreamPark starts keeping w's caller waiting, a ping every interval
// (0: DefaultPingInterval).
func newStreamPark(w http.ResponseWriter, clock llmfleet.Clock, interval time.Duration, shape streamShape) *streamPark {
	p := &streamPark{w: w, rc: http.NewResponseController(w), clock: clock, interval: interval, shape: shape}
	if p.interval <= 0 {
		p.interval = DefaultPingInterval
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if shape.eager {
		p.begin(false)
		p.rc.Flush()
	}
	p.timer = p.clock.AfterFunc(p.interval, p.ping)
	return p
}

// ping sends a ping, the stream's headers first if not sent yet, and
// arms the next one.
func (p *streamPark) ping() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done || p.failed {
		return
	}
	if !p.begun {
		p.begin(true)
	}
	if _, err := p.w.Write(p.shape.ping(nil)); err != nil || p.rc.Flush() != nil {
		p.failed = true
		return
	}
	p.timer = p.clock.AfterFunc(p.interval, p.ping)
}

// begin sends the status and headers of the stream. If trailer is set, the
// batch id header is declared as a trailer, to be set once it is known.
func (p *streamPark) begin(trailer bool) {
	p.shape.begin(p.w.Header(), trailer)
	p.w.WriteHeader(http.StatusOK)
	p.begun = true
}

// stop ends the pings and reports whether the stream has begun. After stop
// returns, the timer writes nothing more.
func (p *streamPark) stop() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done = true
	if p.timer != nil {
		p.timer.Stop()
	}
	return p.begun
}
