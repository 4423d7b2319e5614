// Package httprec keeps a handler's whole answer in memory, for code that
// calls a handler of its own and reads what it answered, as the provider
// emulators do to answer the requests of a batch.
package httprec

import (
	"bytes"
	"net/http"
)

// Recorder is an http.ResponseWriter that keeps the answer written to it:
// its status, its header and its body. Its zero value is ready to use. A
// Recorder is for one goroutine.
type Recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

// Header returns the answer's header.
func (r *Recorder) Header() http.Header {
	if r.header == nil {
		r.header = make(http.Header)
	}
	return r.header
}

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

// Status returns the status written, or 200 if none was.
func (r *Recorder) Status() int {
	if r.status == 0 {
		return http.StatusOK
	}
	return r.status
}

// Body returns the body written. It aliases the Recorder's buffer.
func (r *Recorder) Body() []byte { return r.body.Bytes() }

// New returns a Recorder whose answer's header is h (written to as the
// handler sets headers), for a caller that prepared some of them.
func New(h http.Header) *Recorder { return &Recorder{header: h} }

// Flush does nothing: the answer is kept until it is complete. (A handler
// that flushes, such as httputil.ReverseProxy streaming an answer, finds
// a Flusher.)
func (r *Recorder) Flush() {}
