package serve

import (
	"net/http"
	"sync/atomic"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/claudewire"
)

// readiness is the outermost handler of "llmfleet serve". The listener
// is open before the state is (so that a busy port fails before a
// database is made), and until the store is open and the dispatcher runs,
// it answers GET /healthz 200 (the process lives) and everything else 503
// overloaded_error in the API's envelope. Then it hands every request to
// the proxy, answering GET /readyz 200 itself, until shutdown begins.
type readiness struct {
	next    atomic.Pointer[http.Handler]
	stopped atomic.Bool
}

// serve makes h the handler of every request from now on.
func (rd *readiness) serve(h http.Handler) { rd.next.Store(&h) }

// stop makes GET /readyz answer 503 from now on: shutdown has begun.
func (rd *readiness) stop() { rd.stopped.Store(true) }

// ServeHTTP implements http.Handler.
func (rd *readiness) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	next := rd.next.Load()
	if r.URL.Path == "/readyz" && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		switch {
		case next == nil:
			notReady(w, "llmfleet is starting: its state is not open yet")
		case rd.stopped.Load():
			notReady(w, "llmfleet is shutting down")
		default:
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"status":"ready"}` + "\n"))
		}
		return
	}
	if next == nil {
		if r.URL.Path == "/healthz" && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.Write([]byte("ok\n"))
			return
		}
		notReady(w, "llmfleet is starting: its state is not open yet")
		return
	}
	(*next).ServeHTTP(w, r)
}

// notReady answers 503 overloaded_error in the API's envelope, which
// clients retry.
func notReady(w http.ResponseWriter, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Retry-After", "1")
	w.WriteHeader(http.StatusServiceUnavailable)
	w.Write(claudewire.Envelope("overloaded_error", msg, llmfleet.NewID("req_")))
}
