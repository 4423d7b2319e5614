// Package httprec keeps a handler's whole answer in memory: Recorder is
// the http.ResponseWriter of code that reads an answer before it is sent,
// or sends it some other way than through a ResponseWriter.
package httprec

import (
	"bytes"
	"net/http"
	"strconv"
)

// Recorder is an http.ResponseWriter that keeps the answer written to it:
// its status, its header and its body. Its zero value is not ready: use
// New. A Recorder is for one goroutine.
type Recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

// New returns a Recorder whose header is h, or a new empty one if h is
// nil.
func New(h http.Header) *Recorder {
	if h == nil {
		h = make(http.Header)
	}
	return &Recorder{header: h}
}

// Header returns the answer's header.
func (r *Recorder) Header() http.Header { return r.header }

// WriteHeader keeps status, unless a status or a body was written first.
func (r *Recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

// Write appends p to the body, after status 200 if none was written.
func (r *Recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(p)
}

// Flush does nothing: the answer is kept until it is complete.
func (r *Recorder) Flush() {}

// Status returns the status written, 200 if a body was written without
// one, and 0 if nothing was written.
func (r *Recorder) Status() int { return r.status }

// Body returns the body written so far. It aliases the Recorder's buffer.
func (r *Recorder) Body() []byte { return r.body.Bytes() }

// Replay answers w with the status and header kept (status 200 if none
// was written) and body, which replaces the body kept (the same, or an
// edited copy): Content-Encoding is dropped and Content-Length set to
// body's length.
func (r *Recorder) Replay(w http.ResponseWriter, body []byte) {
	h := w.Header()
	for k, v := range r.header {
		h[k] = v
	}
	h.Del("Content-Encoding")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	status := r.status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	w.Write(body)
}
