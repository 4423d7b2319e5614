package dashboard

import (
	"context"
	"embed"
	"encoding/json"
	"io/fs"
	"net/http"
	"path"
	"strings"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/claudewire"
)

//go:embed static
var static embed.FS

// assets maps the names the page is served under to their files and
// content types.
var assets = map[string]struct{ file, contentType string }{
	"":        {"static/index.html", "text/html; charset=utf-8"},
	"app.js":  {"static/app.js", "text/javascript; charset=utf-8"},
	"app.css": {"static/app.css", "text/css; charset=utf-8"},
	// The spend limits panel, apart from app.js.
	"limits.js": {"static/limits.js", "text/javascript; charset=utf-8"},
	// uPlot, vendored (static/vendor/README says which version).
	"uPlot.iife.min.js": {"static/vendor/uPlot.iife.min.js", "text/javascript; charset=utf-8"},
	"uPlot.min.css":     {"static/vendor/uPlot.min.css", "text/css; charset=utf-8"},
}

// contentSecurityPolicy keeps the page to its own origin: no script,
// style, font or image from anywhere else, and requests only to the proxy.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Handler serves the page and its assets. Mount it on a subtree pattern
// such as "/llmfleet/" (or "GET /llmfleet/" when the v1 endpoints are
// mounted with "GET" too, or ServeMux reports a conflict): it serves the
// page at the subtree's root and the assets by their names below it, and
// the page fetches v1/stats and v1/dashboard relative to it. More specific
// patterns, such as the v1 endpoints, take precedence over it.
func Handler() http.Handler { return handler(static) }

// handler serves the assets of fsys (the embedded files, or in the demo
// the files on disk).
func handler(fsys fs.FS) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		name := ""
		if !strings.HasSuffix(r.URL.Path, "/") {
			name = path.Base(r.URL.Path)
		}
		if name == "index.html" {
			name = ""
		}
		a, ok := assets[name]
		if !ok {
			http.NotFound(w, r)
			return
		}
		data, err := fs.ReadFile(fsys, a.file)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		h := w.Header()
		h.Set("Content-Type", a.contentType)
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("Referrer-Policy", "no-referrer")
		if r.Method == http.MethodHead {
			return
		}
		w.Write(data)
	})
}

// SnapshotHandler serves GET /llmfleet/v1/dashboard: the snapshot the hook
// returns, as JSON. A hook error is answered 500 in the Anthropic error
// envelope. Source.Snapshot fits as the hook.
func SnapshotHandler(snapshot func(ctx context.Context) (Snapshot, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("Cache-Control", "no-store")
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			h.Set("Allow", "GET, HEAD")
			w.WriteHeader(http.StatusMethodNotAllowed)
			w.Write(claudewire.Envelope("invalid_request_error", "method "+r.Method+" is not allowed here; use GET", llmfleet.NewID("req_")))
			return
		}
		if snapshot == nil {
			snapshot = (&Source{}).Snapshot
		}
		s, err := snapshot(r.Context())
		if err != nil {
			w.WriteHeader(http.StatusInternalServerError)
			w.Write(claudewire.Envelope("api_error", "dashboard snapshot: "+err.Error(), llmfleet.NewID("req_")))
			return
		}
		body, err := json.Marshal(s)
		if err != nil {
			w.WriteHeader(http.StatusInternalServerError)
			w.Write(claudewire.Envelope("api_error", "dashboard snapshot: "+err.Error(), llmfleet.NewID("req_")))
			return
		}
		if r.Method == http.MethodHead {
			return
		}
		w.Write(body)
	})
}
