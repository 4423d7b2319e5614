package proxy

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/llmfleet/llmfleet/internal/httprec"
)

// recorder keeps an upstream answer, for the proxy to read before it
// answers: the one response recorder of the module (internal/httprec).
type recorder = httprec.Recorder

func newRecorder() *recorder { return new(recorder) }

// writeTo answers w with rec's status and headers, and body.
func writeTo(w http.ResponseWriter, rec *recorder, body []byte) {
	h := w.Header()
	for k, v := range rec.Header() {
		h[k] = v
	}
	h.Del("Content-Encoding")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(rec.Status())
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
