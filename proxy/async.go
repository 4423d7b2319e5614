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
// call would have been answered with, in the shapes of the API it was
// made through (its provider's). A request is visible only to the
// credential that submitted it (in proxy-held-key mode, to the client key
// that did); anyone else gets 404, as for an id that does not exist.
func (s *Server) serveTicket(w http.ResponseWriter, r *http.Request) {
	s.answerTicket(w, r, false)
}

// answerTicket answers a GET of a ticket; openAIFace says whether its
// refusals go in OpenAI's envelope (the path under the OpenAI face) or in
// Anthropic's.
func (s *Server) answerTicket(w http.ResponseWriter, r *http.Request, openAIFace bool) {
	id := r.PathValue("id")
	refuse := func(status int, msg string) { refuseTicket(w, openAIFace, status, msg) }
	sr, ok := s.findTicket(r, id, refuse)
	if !ok {
		return
	}
	if sr.State != llmfleet.RequestDone || sr.Result == nil {
		writeTicket(w, sr.ID, sr.State)
		return
	}
	if sr.Provider == openAIProvider {
		s.writeOpenAIStored(w, r, sr)
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

// findTicket reads the request id for the credential r presents, or
// answers the refusal (401, 404, 500) with refuse and returns false. In
// proxy-held-key mode the request must have been sent by the client key
// presented, through either face.
func (s *Server) findTicket(r *http.Request, id string, refuse func(status int, msg string)) (*llmfleet.StoredRequest, bool) {
	notFound := "llmfleet has no request " + strconv.Quote(id) + " for this credential"
	cred := credentialFrom(r.Header)
	forms := keyForms(cred)
	// clients are the names the presented key may have been stored under:
	// the name of its key, and the name of the credential as presented,
	// which tickets made before names were by key alone carry.
	var clients []string
	if s.Credentials != nil {
		forms = s.heldForms(cred)
		if forms == nil {
			refuse(http.StatusUnauthorized, "")
			return nil, false
		}
		clients = []string{s.ownerName(cred), s.fingerprint(cred)}
	} else if cred.IsZero() {
		refuse(http.StatusUnauthorized, noKeyMessage)
		return nil, false
	}
	tickets, ok := s.Submitter.(llmfleet.Tickets)
	if !ok {
		refuse(http.StatusNotFound, notFound)
		return nil, false
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
		refuse(http.StatusNotFound, notFound)
		return nil, false
	case err != nil:
		if r.Context().Err() == nil {
			s.log.Warn("request lookup failed", "request_id", id, "err", err)
		}
		refuse(http.StatusInternalServerError, "llmfleet could not read its state")
		return nil, false
	case clients != nil && !slices.Contains(clients, sr.Header.Get(clientHeader)):
		refuse(http.StatusNotFound, notFound)
		return nil, false
	}
	return sr, true
}

// heldForms returns, in proxy-held-key mode, the upstream credentials a
// request of the client presenting cred was stored under: the Anthropic
// one and, if the OpenAI face is open, the OpenAI one; nil if neither
// face admits the key.
func (s *Server) heldForms(cred llmfleet.Credential) []llmfleet.Credential {
	var forms []llmfleet.Credential
	if up, ok := s.Credentials(cred); ok {
		forms = append(forms, up)
	}
	if s.OpenAICredentials != nil {
		if up, ok := s.OpenAICredentials(cred); ok {
			forms = append(forms, openAIKey(up))
		}
	}
	return forms
}

// noKeyMessage is the message of a ticket asked for without a key.
const noKeyMessage = "x-api-key header is required"

// refuseTicket answers a refusal of the tickets API with status and msg
// in the envelope of the face asked (msg "" for 401: the face's own
// message for an unknown key).
func refuseTicket(w http.ResponseWriter, openAIFace bool, status int, msg string) {
	if openAIFace {
		typ, code := "invalid_request_error", ""
		switch status {
		case http.StatusUnauthorized:
			code = "invalid_api_key"
			switch msg {
			case "":
				msg = "Incorrect API key provided. This llmfleet admits clients by keys of its own."
			case noKeyMessage:
				msg = "You didn't provide an API key. Provide it in an Authorization header: Bearer YOUR_KEY."
			}
		case http.StatusInternalServerError:
			typ = "server_error"
		}
		writeOpenAIError(w, status, typ, code, "", msg)
		return
	}
	switch status {
	case http.StatusUnauthorized:
		if msg == "" {
			writeAPIError(w, unauthorized)
			return
		}
		writeAPIError(w, &apiError{status, "authentication_error", msg})
	case http.StatusNotFound:
		writeAPIError(w, &apiError{status, "not_found_error", msg})
	default:
		writeAPIError(w, &apiError{status, "api_error", msg})
	}
}
