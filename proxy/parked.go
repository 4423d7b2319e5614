package proxy

import (
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/llmfleet/llmfleet"
)

// parkedStream keeps a streaming caller's connection alive while its
// batched request waits: every interval it sends a ping event, the first
// one preceded by the 200 status and the stream's headers. It holds no
// goroutine while waiting, only a timer.
type parkedStream struct {
	w        http.ResponseWriter
	rc       *http.ResponseController
	clock    llmfleet.Clock
	interval time.Duration

	mu     sync.Mutex
	begun  bool
	done   bool
	timer  llmfleet.Timer
	failed bool // a write failed: the caller is gone
}

// arm starts the ping timer.
func (p *parkedStream) arm() {
	p.mu.Lock()
	p.timer = p.clock.AfterFunc(p.interval, p.ping)
	p.mu.Unlock()
}

func (p *parkedStream) ping() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done || p.failed {
		return
	}
	if !p.begun {
		p.begin(true)
	}
	if _, err := io.WriteString(p.w, pingEvent); err != nil || p.rc.Flush() != nil {
		p.failed = true
		return
	}
	p.timer = p.clock.AfterFunc(p.interval, p.ping)
}

// begin sends the status and headers of the stream. If trailer is set, the
// batch id header is declared as a trailer, to be set once it is known.
func (p *parkedStream) begin(trailer bool) {
	h := p.w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("Request-Id", llmfleet.NewID("req_"))
	if trailer {
		h.Set("Trailer", HeaderBatchID)
	}
	p.w.WriteHeader(http.StatusOK)
	p.begun = true
}

// stop ends the pings and reports whether the stream has begun. After stop
// returns, the timer writes nothing more.
func (p *parkedStream) stop() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done = true
	if p.timer != nil {
		p.timer.Stop()
	}
	return p.begun
}
