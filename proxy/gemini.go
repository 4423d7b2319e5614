package proxy

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/geminiwire"
)

// DefaultGeminiUpstream is the Gemini API, the upstream of the Gemini face
// when Server.GeminiUpstream is nil.
const DefaultGeminiUpstream = "https://generativelanguage.googleapis.com"

// GeminiPrefix is the path prefix of the Gemini face: an SDK's base URL is
// http://HOST:PORT/gemini (or http://HOST:PORT/budget/<ms>/gemini).
const GeminiPrefix = "/gemini"

// GeminiRequestsPath is the tickets API under the Gemini face's base URL,
// its refusals in Google's envelope.
const GeminiRequestsPath = GeminiPrefix + "/" + geminiwire.Version + "/llmfleet/requests/"

// geminiProvider is the provider name of the Gemini face's Requests.
const geminiProvider = "gemini"

// geminiFace is the Gemini API's face, under GeminiPrefix:
// models/{model}:generateContent and :streamGenerateContent through the
// routed-call pipeline, batches and files by owner in proxy-held-key mode
// (gemini_owners.go), the rest passed upstream; its answers, errors
// (Google's envelope) and streams in the API's shapes.
type geminiFace struct {
	s *Server
	// path is the API path called ("/v1beta/models/m:generateContent").
	path string
	// client names the client in proxy-held-key mode ("" otherwise).
	client string
}

// geminiKeys is the way of the Gemini API's credentials: its key in
// x-goog-api-key or ?key= (else x-api-key), or a bearer token; upstream
// the key goes in x-goog-api-key, never in the URL.
func geminiKeys() keyWay {
	return keyWay{read: geminiCredential, form: geminiKey, set: setGeminiCredential}
}

// geminiCredential returns the credential r presents: its Gemini key
// (x-goog-api-key, else ?key=) as the key, else its x-api-key, and its
// bearer token.
func geminiCredential(r *http.Request) llmfleet.Credential {
	c := credentialFrom(r.Header)
	if key := geminiwire.RequestKey(r.Header, r.URL.Query()); key != "" {
		c.APIKey = key
	}
	return c
}

// geminiKey returns a credential as the Gemini API takes it: a key, else
// a bearer token.
func geminiKey(c llmfleet.Credential) llmfleet.Credential {
	if c.APIKey != "" {
		return llmfleet.Credential{APIKey: c.APIKey}
	}
	return llmfleet.Credential{AuthToken: c.AuthToken}
}

// setGeminiCredential replaces the credential of an upstream request with
// c, its key in x-goog-api-key (a ?key= parameter dropped).
func setGeminiCredential(out *http.Request, c llmfleet.Credential) {
	if q := out.URL.Query(); q.Has("key") {
		q.Del("key")
		out.URL.RawQuery = q.Encode()
	}
	h := out.Header
	setCredential(h, llmfleet.Credential{AuthToken: c.AuthToken})
	h.Del(geminiwire.APIKeyHeader)
	if c.APIKey != "" {
		h.Set(geminiwire.APIKeyHeader, c.APIKey)
	}
}

// prefix: /gemini/<path> is <path> of the Gemini API, its uploads
// (/upload/v1beta/files) included.
func (f geminiFace) prefix() (mount, api string) { return GeminiPrefix, "/" }

// hold maps the client's key to the Gemini key the proxy holds for it
// (Server.GeminiCredentials); without one the face is closed.
func (f geminiFace) hold(presented llmfleet.Credential) (llmfleet.Credential, *refusal) {
	return holdWith(f, f.s.GeminiCredentials, presented)
}

// forCall returns the face for a call to path by the client named client.
func (f geminiFace) forCall(path, client string) mountedFace {
	f.path, f.client = path, client
	return f
}

// routed: POST models/{model}:generateContent and :streamGenerateContent
// (under /v1beta or /v1) are routed by budget; everything else passes
// through.
func (f geminiFace) routed(method, path string) bool {
	_, m, ok := geminiMethod(path)
	return ok && method == http.MethodPost && (m == "generateContent" || m == "streamGenerateContent")
}

// geminiMethod reads a versioned model method path
// ("/v1beta/models/<id>:<method>", or "/v1/...": the @google/genai SDK's
// default version).
func geminiMethod(path string) (model, method string, ok bool) {
	if rest, _, ok := geminiwire.Unversioned(path); !ok || !strings.HasPrefix(rest, "/models/") {
		return "", "", false
	}
	return geminiwire.SplitMethod(path)
}

// traits: sync, flex or batch may be forced; refusals of a call's headers
// and body go without the route header; a batched caller waits in its
// handler, a streaming one on blank lines (an SDK skips them; a comment
// would be an invalid chunk to it), the stream begun at once.
func (f geminiFace) traits() faceTraits {
	return faceTraits{routes: [3]llmfleet.Route{llmfleet.RouteSync, llmfleet.RouteFlex, llmfleet.RouteBatch}, bare: true,
		stream: streamShape{eager: true, ping: geminiPing, begin: openAIStreamHead}, key: geminiKeys(), billed: geminiBilled}
}

// geminiPing appends the blank line a waiting stream is sent.
func geminiPing(b []byte) []byte { return append(b, "\r\n\r\n"...) }

// admit checks that the call presents a key.
func (f geminiFace) admit(r *http.Request, _ *call) *refusal {
	if geminiCredential(r).IsZero() {
		e := f.says(noKey, "")
		e.bare = true
		return e
	}
	return nil
}

// route reads the body, builds the Request and routes it: forced, a
// ticket's (batch, not streamed: the stored answer is the
// GenerateContentResponse), else by the Submitter's plan.
func (f geminiFace) route(r *http.Request, c *call, force llmfleet.Route) *refusal {
	s := f.s
	model, method, _ := geminiMethod(f.path)
	body, e := s.bodies.read(r)
	if e != nil {
		return &refusal{status: e.status, typ: geminiwire.StatusOf(e.status), msg: e.msg, bare: true, closes: e == bodyTooSlow || e == bodiesFull}
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(body, &obj); err != nil {
		return &refusal{status: http.StatusBadRequest, typ: geminiwire.StatusInvalidArgument, bare: true,
			msg: "Invalid JSON payload received: the body is not a JSON object."}
	}
	if e := heldRefusal(s, r, f, f.client, body); e != nil {
		e.bare = true
		return e
	}
	cred := geminiCredential(r)
	upstream := geminiKey(cred)
	if held, ok := r.Context().Value(upstreamCredential{}).(llmfleet.Credential); ok {
		upstream = geminiKey(held) // proxy-held keys: pooled under the proxy's key
	}
	c.endpoint, c.model, c.stream = f.path, model, method == "streamGenerateContent"
	c.req = &llmfleet.Request{Provider: geminiProvider, Credential: upstream,
		Endpoint: "/" + geminiwire.Version + "/models/" + model + ":generateContent", Body: body, Client: s.clientOf(cred),
		NoBatch: c.noBatch, BatchOnly: c.batchOnly}
	noteModel(r.Context(), model)
	planRoute(s, c, force)
	if c.route == llmfleet.RouteBatch && s.Submitter == nil {
		return &refusal{status: http.StatusBadRequest, typ: geminiwire.StatusInvalidArgument, param: "llmfleet-route", msg: "This llmfleet does not batch."}
	}
	return nil
}

// note records the budget of a call planned for the access log (its
// model was noted as its body was read).
func (f geminiFace) note(r *http.Request, c *call, e *refusal) {
	openAIFace{}.note(r, c, e)
}

// refuse answers e in Google's error envelope.
func (f geminiFace) refuse(w http.ResponseWriter, e *refusal) {
	if e.closes {
		w.Header().Set("Connection", "close")
	}
	writeGeminiBody(w, e.status, geminiwire.Envelope(e.status, e.msg))
}

// writeGeminiBody answers status with the JSON body.
func writeGeminiBody(w http.ResponseWriter, status int, body []byte) {
	writeBody(w, status, "application/json; charset=UTF-8", body)
}

// geminiUpstreamURL returns the Gemini upstream's base URL.
func geminiUpstreamURL(u *url.URL) *url.URL {
	if u != nil {
		return u
	}
	d, _ := url.Parse(DefaultGeminiUpstream)
	return d
}

// The Gemini face is a face of the proxy.
var _ mountedFace = geminiFace{}
