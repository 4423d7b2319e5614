package proxy

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/llmfleet/llmfleet"
)

// This file reads a request's latency budget when it comes in the path
// (/budget/<ms>/...) or in the header llmfleet-latency-budget-ms.

// budgetPrefix returns the handler of /budget/<ms>/<path>: <path>, served
// by mux, with a budget.
func (s *Server) budgetPrefix(mux http.Handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { s.serveBudgetPrefix(mux, w, r) }
}

// serveBudgetPrefix serves /budget/<ms>/<path> as <path> with a budget; a
// budget that is no number of milliseconds is refused in the envelope of
// the face <path> is of.
func (s *Server) serveBudgetPrefix(mux http.Handler, w http.ResponseWriter, r *http.Request) {
	path := "/" + r.PathValue("path")
	budget, err := parseBudget(r.PathValue("ms"))
	if err != nil {
		if path == "/v1/messages" {
			w.Header().Set(HeaderRoute, string(llmfleet.RouteSync))
		}
		f, _ := s.faceAt(path)
		f.refuse(w, &refusal{status: http.StatusBadRequest, typ: "invalid_request_error",
			msg: "The latency budget in the path /budget/<ms>/ must be a non-negative integer number of milliseconds."})
		return
	}
	// The escaped form of path: the escaped path less its first two
	// segments, whatever the escapes in the budget.
	rawPath := ""
	if rest, ok := strings.CutPrefix(r.URL.EscapedPath(), "/budget/"); ok {
		if _, after, ok := strings.Cut(rest, "/"); ok {
			rawPath = "/" + after
		}
	}
	r2 := withPath(r, path, rawPath)
	mux.ServeHTTP(w, r2.WithContext(llmfleet.WithBudget(r.Context(), budget)))
}

// withPath returns a shallow copy of r for another path.
func withPath(r *http.Request, path, rawPath string) *http.Request {
	r2 := new(http.Request)
	*r2 = *r
	u := *r.URL
	u.Path, u.RawPath = path, rawPath
	r2.URL = &u
	r2.RequestURI = u.RequestURI()
	return r2
}

// parseBudget parses a budget in integer milliseconds.
func parseBudget(v string) (time.Duration, error) {
	ms, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || ms < 0 || ms > int64(1<<62/time.Millisecond) {
		return 0, strconv.ErrSyntax
	}
	return time.Duration(ms) * time.Millisecond, nil
}
