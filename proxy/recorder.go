package proxy

import (
	"net/http"
	"net/url"

	"github.com/llmfleet/llmfleet/internal/httprec"
)

// recorder is an http.ResponseWriter that keeps an upstream answer, for
// the proxy to read before it answers.
type recorder = httprec.Recorder

func newRecorder() *recorder { return httprec.New(nil) }

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
