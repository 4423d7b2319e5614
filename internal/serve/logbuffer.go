package serve

import (
	"io"
	"sync"
	"time"
)

// LogBuffer is the writer of serve's log: it takes each record (one Write
// per line, as slog's handlers make them) into memory and writes what has
// gathered to w every interval, or at once past maxLogBuffer bytes, so
// that the access log costs the request path no system call. Close
// writes what is left; a process killed outright loses at most one
// interval of lines.
type LogBuffer struct {
	w        io.Writer
	interval time.Duration

	mu   sync.Mutex // guards buf and writes to w
	buf  []byte
	stop chan struct{}
	done chan struct{}
}

// maxLogBuffer is the most bytes a LogBuffer holds before it writes.
const maxLogBuffer = 64 << 10

// NewLogBuffer starts a LogBuffer writing to w every interval.
func NewLogBuffer(w io.Writer, interval time.Duration) *LogBuffer {
	b := &LogBuffer{w: w, interval: interval, stop: make(chan struct{}), done: make(chan struct{})}
	go b.loop()
	return b
}

// Write takes one record.
func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if len(b.buf) >= maxLogBuffer {
		b.flushLocked()
	}
	return len(p), nil
}

// loop writes what has gathered every interval until Close.
func (b *LogBuffer) loop() {
	defer close(b.done)
	t := time.NewTicker(b.interval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			b.mu.Lock()
			b.flushLocked()
			b.mu.Unlock()
		case <-b.stop:
			return
		}
	}
}

// flushLocked writes what has gathered; b.mu is held.
func (b *LogBuffer) flushLocked() {
	if len(b.buf) == 0 {
		return
	}
	b.w.Write(b.buf) // a log that cannot be written has nowhere to say so
	if cap(b.buf) > 4*maxLogBuffer {
		b.buf = nil
	} else {
		b.buf = b.buf[:0]
	}
}

// Close stops the writer and writes what is left.
func (b *LogBuffer) Close() error {
	close(b.stop)
	<-b.done
	b.mu.Lock()
	defer b.mu.Unlock()
	b.flushLocked()
	return nil
}
