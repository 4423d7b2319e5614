package proxy

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"

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

// ticketDesk serves the tickets API under one face: GET
// RequestsPath + id (the Anthropic face) or OpenAIRequestsPath + id (the
// OpenAI face), its refusals in that face's envelope. It answers 202 with
// the ticket while the request is pending, then the status and body its
// synchronous call would have been answered with, in the shapes of the
// API it was made through (its provider's face). A request is visible
// only to the credential that submitted it (in proxy-held-key mode, to
// the client key that did); anyone else gets 404, as for an id that does
// not exist.
type ticketDesk struct {
	s *Server
	f face
}

// serve serves GET <tickets path>{id}.
func (t ticketDesk) serve(w http.ResponseWriter, r *http.Request) {
	sr, e := t.find(r, r.PathValue("id"))
	if e != nil {
		t.f.refuse(w, e)
		return
	}
	if sr.State != llmfleet.RequestDone || sr.Result == nil {
		writeTicket(w, sr.ID, sr.State)
		return
	}
	providerFace(t.s, sr.Provider).stored(r.Context(), w, sr)
}

// providerFace returns the face of the API a provider's requests are made
// through.
func providerFace(s *Server, provider string) face {
	switch provider {
	case openAIProvider:
		return openAIFace{s: s}
	case geminiProvider:
		return geminiFace{s: s}
	}
	return anthropicFace{s: s}
}

// ticketNotFoundMessage is the message of an unknown ticket.
func ticketNotFoundMessage(id string) string {
	return "llmfleet has no request " + strconv.Quote(id) + " for this credential"
}

// find reads the request id for the credential r presents, or returns
// the refusal (401, 404, 500). In proxy-held-key mode the request must
// have been sent by the client key presented, through either face.
func (t ticketDesk) find(r *http.Request, id string) (*llmfleet.StoredRequest, *refusal) {
	s := t.s
	cred := t.f.traits().key.read(r)
	forms := keyForms(cred)
	// clients are the names the presented key may have been stored under:
	// the name of its key, and the name of the credential as presented,
	// which tickets made before names were by key alone carry.
	var clients []string
	if s.Credentials != nil {
		if forms = t.heldForms(cred); forms == nil {
			return nil, t.f.says(unknownKey, "")
		}
		clients = []string{s.ownerName(cred), fingerprint(s.Fingerprint, cred)}
	} else if cred.IsZero() {
		return nil, t.f.says(noKey, "")
	}
	tickets, ok := s.Submitter.(llmfleet.Tickets)
	if !ok {
		return nil, t.f.says(ticketNotFound, id)
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
		return nil, t.f.says(ticketNotFound, id)
	case err != nil:
		if r.Context().Err() == nil {
			s.log.Warn("request lookup failed", "request_id", id, "err", err)
		}
		return nil, t.f.says(ticketState, "")
	case clients != nil && !slices.Contains(clients, sr.Header.Get(clientHeader)):
		return nil, t.f.says(ticketNotFound, id)
	}
	return sr, nil
}

// heldForms returns, in proxy-held-key mode, the upstream credentials a
// request of the client presenting cred was stored under: for each face
// that admits the key, the one it holds for it, in the form its API takes
// (keyWay.form); nil if no face admits the key.
func (t ticketDesk) heldForms(cred llmfleet.Credential) []llmfleet.Credential {
	var forms []llmfleet.Credential
	for _, f := range t.s.faces {
		if up, e := f.hold(cred); e == nil {
			forms = append(forms, f.traits().key.form(up))
		}
	}
	return forms
}
