package proxy

import (
	"bytes"
	"net/http"
	"net/url"
	"strconv"
)

// recorder is an http.ResponseWriter that keeps an upstream answer, for
// the proxy to read before it answers.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func newRecorder() *recorder { return &recorder{header: make(http.Header)} }

func (rec *recorder) Header() http.Header { return rec.header }

func (rec *recorder) WriteHeader(status int) {
	if rec.status == 0 {
		rec.status = status
	}
}

func (rec *recorder) Write(p []byte) (int, error) {
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	return rec.body.Write(p)
}

// Flush does nothing: the answer is held until it is complete.
func (rec *recorder) Flush() {}

// writeTo answers w with the recorded status and headers and body.
func (rec *recorder) writeTo(w http.ResponseWriter, body []byte) {
	h := w.Header()
	for k, v := range rec.header {
		h[k] = v
	}
	h.Del("Content-Encoding")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	status := rec.status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	w.Write(body)
}

// fetchWith serves a copy of r with the query q through h (a reverse
// proxy) and returns the answer recorded.
func fetchWith(h http.Handler, r *http.Request, q url.Values) *recorder {
	r2 := r.Clone(r.Context())
	u := *r.URL
	u.RawQuery = q.Encode()
	r2.URL = &u
	rec := newRecorder()
	h.ServeHTTP(rec, r2)
	return rec
}
