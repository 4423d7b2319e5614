package proxy

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/llmfleet/llmfleet"
)

// RequestsPath is the path prefix of the async tickets API: GET
// RequestsPath + id reads a batched request by its llmfleet-request-id.
const RequestsPath = "/llmfleet/v1/requests/"

// ticketType is the "type" of a ticket body.
const ticketType = "llmfleet_request"

// clientHeader is the request header under which, in proxy-held-key mode,
// a batched request carries the fingerprint of the key its client
// presented, so that only that client can read it back. Like every
// llmfleet-* header it never goes upstream; it is kept with the request.
const clientHeader = "Llmfleet-Client"

// noTickets answers an async request to a Submitter that cannot keep
// answers.
var noTickets = invalidRequest("This llmfleet proxy keeps no durable state, so it cannot answer Prefer: respond-async; send the request without it.")

// ticket is the body of a 202 answer about a request still pending.
type ticket struct {
	ID     string `json:"id"`
	Type   string `json:"type"`
	Status string `json:"status"`
}

// prefersAsync reports whether the Prefer header (RFC 7240) of h asks for
// respond-async: whether a preference, of the comma-separated ones, is
// named so. A comma inside a quoted value separates nothing.
func prefersAsync(h http.Header) bool {
	for _, v := range h.Values("Prefer") {
		for v != "" {
			var pref string
			pref, v = cutUnquoted(v, ',')
			name := pref
			if i := strings.IndexAny(name, "=;"); i >= 0 {
				name = name[:i]
			}
			if strings.EqualFold(strings.TrimSpace(name), "respond-async") {
				return true
			}
		}
	}
	return false
}

// cutUnquoted cuts s around the first sep outside a quoted string, in
// which a backslash escapes the next byte.
func cutUnquoted(s string, sep byte) (before, after string) {
	quoted := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case quoted && c == '\\':
			i++
		case c == '"':
			quoted = !quoted
		case !quoted && c == sep:
			return s[:i], s[i+1:]
		}
	}
	return s, ""
}

// serveAsync accepts a routed call for batching and answers 202 with its
// ticket at once.
//
// The Submitter gets what is left of the budget, counted from the
// request's arrival (at least a nanosecond, should it be spent: the pool
// then flushes as soon as it can; nothing fails).
func (s *Server) serveAsync(w http.ResponseWriter, r *http.Request, c *call) {
	budget := c.budget
	if budget > 0 {
		budget = max(s.remaining(c), time.Nanosecond)
	}
	id, err := s.Submitter.(llmfleet.Tickets).Enqueue(r.Context(), budget, c.req)
	if errors.Is(err, llmfleet.ErrNoStore) {
		writeAPIError(w, noTickets)
		return
	}
	if err != nil {
		s.writeFailure(w, r, err)
		return
	}
	h := w.Header()
	h.Set("Location", RequestsPath+id)
	h.Set("Preference-Applied", "respond-async")
	writeTicket(w, id, llmfleet.RequestQueued)
}

// writeTicket answers 202 with the ticket of a pending request.
func writeTicket(w http.ResponseWriter, id string, state llmfleet.RequestState) {
	body, _ := json.Marshal(ticket{ID: id, Type: ticketType, Status: string(state)})
	h := w.Header()
	h.Set(HeaderRequestID, id)
	h.Set(HeaderRoute, string(llmfleet.RouteBatch))
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Request-Id", llmfleet.NewID("req_"))
	w.WriteHeader(http.StatusAccepted)
	w.Write(body)
}

// serveTicket serves GET /llmfleet/v1/requests/{id}: 202 with the ticket
// while the request is pending, then the status and body its synchronous
// call would have been answered with. A request is visible only to the
// credential that submitted it (in proxy-held-key mode, to the client key
// that did); anyone else gets 404, as for an id that does not exist.
func (s *Server) serveTicket(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	notFound := &apiError{http.StatusNotFound, "not_found_error", "llmfleet has no request " + strconv.Quote(id) + " for this credential"}
	cred := credentialFrom(r.Header)
	forms := keyForms(cred)
	// clients are the names the presented key may have been stored under:
	// the name of its key, and the name of the credential as presented,
	// which tickets made before names were by key alone carry.
	var clients []string
	if s.Credentials != nil {
		up, ok := s.Credentials(cred)
		if !ok {
			writeAPIError(w, unauthorized)
			return
		}
		clients = []string{s.ownerName(cred), s.fingerprint(cred)}
		forms = []llmfleet.Credential{up}
	} else if cred.IsZero() {
		writeAPIError(w, &apiError{http.StatusUnauthorized, "authentication_error", "x-api-key header is required"})
		return
	}
	tickets, ok := s.Submitter.(llmfleet.Tickets)
	if !ok {
		writeAPIError(w, notFound)
		return
	}
	var sr *llmfleet.StoredRequest
	var err error
	for _, c := range forms {
		if sr, err = tickets.Lookup(r.Context(), id, c); !errors.Is(err, llmfleet.ErrNotFound) {
			break
		}
	}
	switch {
	case errors.Is(err, llmfleet.ErrNotFound):
		writeAPIError(w, notFound)
		return
	case err != nil:
		if r.Context().Err() == nil {
			s.log.Warn("request lookup failed", "request_id", id, "err", err)
		}
		writeAPIError(w, &apiError{http.StatusInternalServerError, "api_error", "llmfleet could not read its state"})
		return
	case clients != nil && !slices.Contains(clients, sr.Header.Get(clientHeader)):
		writeAPIError(w, notFound)
		return
	}
	if sr.State != llmfleet.RequestDone || sr.Result == nil {
		writeTicket(w, sr.ID, sr.State)
		return
	}
	status, body := resultAnswer(sr.Result)
	h := w.Header()
	h.Set(HeaderRequestID, sr.ID)
	h.Set(HeaderRoute, string(llmfleet.RouteBatch))
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	reqID := ""
	if status != http.StatusOK {
		var env struct {
			RequestID string `json:"request_id"`
		}
		json.Unmarshal(body, &env)
		reqID = env.RequestID
	}
	if reqID == "" {
		reqID = llmfleet.NewID("req_")
	}
	h.Set("Request-Id", reqID)
	w.WriteHeader(status)
	w.Write(body)
}
