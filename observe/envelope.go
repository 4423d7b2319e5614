package observe

import (
	"net/http"
	"strings"
)

// envelopeWriter answers the plain-text 404 and 405 of net/http (ServeMux,
// http.NotFound, http.Error) in the Anthropic error envelope, as every
// answer of llmfleet itself is: 404 not_found_error, 405
// invalid_request_error with the Allow header ServeMux set.
type envelopeWriter struct {
	http.ResponseWriter
	r       *http.Request
	swallow bool
}

func (e *envelopeWriter) WriteHeader(code int) {
	h := e.Header()
	if e.swallow || (code != http.StatusNotFound && code != http.StatusMethodNotAllowed) ||
		!strings.HasPrefix(h.Get("Content-Type"), "text/plain") {
		e.ResponseWriter.WriteHeader(code)
		return
	}
	e.swallow = true
	h.Del("X-Content-Type-Options")
	if code == http.StatusNotFound {
		writeJSONError(e.ResponseWriter, code, "not_found_error", "Not found: "+e.r.URL.Path)
		return
	}
	writeJSONError(e.ResponseWriter, code, "invalid_request_error",
		"Method "+e.r.Method+" is not allowed for "+e.r.URL.Path+" (allowed: "+h.Get("Allow")+").")
}

// Write drops the plain-text body of an answer already given as an
// envelope.
func (e *envelopeWriter) Write(b []byte) (int, error) {
	if e.swallow {
		return len(b), nil
	}
	return e.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (e *envelopeWriter) Unwrap() http.ResponseWriter { return e.ResponseWriter }

// ownPath reports whether r is for an endpoint of the Handler itself
// rather than the proxy behind it. A path with doubled slashes always goes
// to the proxy, which folds them: ServeMux would answer it with a redirect
// that not every client follows for a POST.
func ownPath(r *http.Request, requestsPath string) bool {
	p := r.URL.Path
	if r.Method == http.MethodConnect || strings.Contains(r.URL.EscapedPath(), "//") {
		return false
	}
	return p == "/metrics" || strings.HasPrefix(p, "/llmfleet/") && !strings.HasPrefix(p, requestsPath)
}
