package sse

import (
	"errors"
	"io"
	"time"
)

// Reader reads server-sent events from an io.Reader.
type Reader struct {
	r     io.Reader
	d     Decoder
	queue []Event
	buf   []byte
	err   error
}

// NewReader returns a Reader reading from r.
func NewReader(r io.Reader) *Reader {
	rd := &Reader{r: r, buf: make([]byte, 32<<10)}
	rd.d.Emit = func(ev Event) { rd.queue = append(rd.queue, ev) }
	return rd
}

// Next returns the next event. At the end of the stream it returns io.EOF,
// or io.ErrUnexpectedEOF if the stream ends inside an event or a line (an
// event is complete only at its blank line). Any other error of the
// underlying reader is returned as is.
func (r *Reader) Next() (Event, error) {
	for len(r.queue) == 0 {
		if r.err != nil {
			return Event{}, r.err
		}
		n, err := r.r.Read(r.buf)
		r.d.Write(r.buf[:n])
		switch {
		case errors.Is(err, io.EOF):
			r.err = io.EOF
			if r.d.Pending() {
				r.err = io.ErrUnexpectedEOF
			}
		case err != nil:
			r.err = err
		}
	}
	ev := r.queue[0]
	r.queue[0] = Event{}
	r.queue = r.queue[1:]
	return ev, nil
}

// Retry returns the reconnection time set by the last valid "retry" field
// read so far, if any.
func (r *Reader) Retry() (time.Duration, bool) { return r.d.Retry() }
