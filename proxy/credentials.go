package proxy

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"

	"github.com/llmfleet/llmfleet"
)

// keyWay is how a face's API carries a client's credential: the shared
// parts of the proxy (the access log, tickets, client rules, owners, the
// mount's proxy-held keys) read a call's credential through its face's.
type keyWay struct {
	// read returns the credential a request presents.
	read func(r *http.Request) llmfleet.Credential
	// form returns c as the API takes it upstream: the form its calls are
	// pooled and stored under.
	form func(c llmfleet.Credential) llmfleet.Credential
	// set puts c on an upstream request in place of the client's
	// credential, where the API takes it.
	set func(out *http.Request, c llmfleet.Credential)
}

// headerKeys is the way of the Anthropic API's credentials: x-api-key, or
// Authorization: Bearer, both sent on as they are.
func headerKeys() keyWay {
	return keyWay{read: headerCredential, form: sameKey, set: setHeaderCredential}
}

// headerCredential returns the credential r's headers carry
// (credentialFrom).
func headerCredential(r *http.Request) llmfleet.Credential { return credentialFrom(r.Header) }

// sameKey returns c as it is.
func sameKey(c llmfleet.Credential) llmfleet.Credential { return c }

// setHeaderCredential replaces the credential headers of out with c.
func setHeaderCredential(out *http.Request, c llmfleet.Credential) { setCredential(out.Header, c) }

// credentialFrom returns the credential carried by a request's headers:
// x-api-key, or Authorization: Bearer.
func credentialFrom(h http.Header) llmfleet.Credential {
	c := llmfleet.Credential{APIKey: h.Get("X-Api-Key")}
	if a := h.Get("Authorization"); len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
		c.AuthToken = strings.TrimSpace(a[7:])
	}
	return c
}

// keyForms returns the forms of a credential carrying the same key: a key
// sent as x-api-key or as a bearer token is the same secret, so either
// header reads what the other made. A credential carrying both (or
// neither) has the one form.
func keyForms(c llmfleet.Credential) []llmfleet.Credential {
	switch {
	case c.APIKey != "" && c.AuthToken == "":
		return []llmfleet.Credential{c, {AuthToken: c.APIKey}}
	case c.AuthToken != "" && c.APIKey == "":
		return []llmfleet.Credential{c, {APIKey: c.AuthToken}}
	}
	return []llmfleet.Credential{c}
}

// clientKey returns a presented client credential in the one form its key
// has whichever header carried it (see keyForms): the form clients are
// named by in proxy-held-key mode.
func clientKey(c llmfleet.Credential) llmfleet.Credential {
	if c.APIKey == "" && c.AuthToken != "" {
		return llmfleet.Credential{APIKey: c.AuthToken}
	}
	return c
}

// setCredential replaces the credential headers of h with c.
func setCredential(h http.Header, c llmfleet.Credential) {
	h.Del("X-Api-Key")
	h.Del("Authorization")
	if c.APIKey != "" {
		h.Set("X-Api-Key", c.APIKey)
	}
	if c.AuthToken != "" {
		h.Set("Authorization", "Bearer "+c.AuthToken)
	}
}

// ClientKeys is a Server.Credentials hook for the proxy-held-key mode: the
// proxy admits clients by keys of its own and sends every admitted request
// upstream with one credential. Client keys are kept only as SHA-256
// hashes (see HashKey), so the configuration holds no client secret.
type ClientKeys struct {
	// Upstream is the credential sent upstream for every admitted client.
	Upstream llmfleet.Credential
	// OpenAI is the key sent to the OpenAI upstream for every admitted
	// client (as a bearer token); zero keeps the OpenAI face closed.
	OpenAI llmfleet.Credential
	// Gemini is the key sent to the Gemini upstream for every admitted
	// client (as x-goog-api-key); zero keeps the Gemini face closed.
	Gemini llmfleet.Credential
	// Hashes maps the hex SHA-256 of each admitted client key, as
	// HashKey returns it, to a name for the client (used in logs).
	Hashes map[string]string
}

// HashKey returns the hex SHA-256 of a client key, the form ClientKeys
// stores. It is what `printf %s "$KEY" | sha256sum` prints.
func HashKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// MapOpenAI is the Server.OpenAICredentials hook: it admits a client
// presenting a known key and returns the OpenAI key.
func (k *ClientKeys) MapOpenAI(presented llmfleet.Credential) (llmfleet.Credential, bool) {
	if _, ok := k.lookup(presented); ok && !k.OpenAI.IsZero() {
		return k.OpenAI, true
	}
	return llmfleet.Credential{}, false
}

// MapGemini is the Server.GeminiCredentials hook: it admits a client
// presenting a known key and returns the Gemini key.
func (k *ClientKeys) MapGemini(presented llmfleet.Credential) (llmfleet.Credential, bool) {
	if _, ok := k.lookup(presented); ok && !k.Gemini.IsZero() {
		return k.Gemini, true
	}
	return llmfleet.Credential{}, false
}

// Map is the Server.Credentials hook: it admits a client presenting a known
// key, as x-api-key or as a bearer token, and returns the upstream
// credential. Name gives the client's name for the same key.
func (k *ClientKeys) Map(presented llmfleet.Credential) (llmfleet.Credential, bool) {
	if _, ok := k.lookup(presented); ok {
		return k.Upstream, true
	}
	return llmfleet.Credential{}, false
}

// fingerprint names a client credential with hook, Server.Fingerprint
// (nil: Credential.Fingerprint(nil)).
func fingerprint(hook func(llmfleet.Credential) string, c llmfleet.Credential) string {
	if hook != nil {
		return hook(c)
	}
	return c.Fingerprint(nil)
}

// ownerName names the client presenting c in proxy-held-key mode: the
// fingerprint of its key, whichever header carried it.
func (s *Server) ownerName(c llmfleet.Credential) string {
	return s.keyNames.name(clientKey(c), s.fingerprintOf)
}

// fingerprintOf names c with Server.Fingerprint (see fingerprint).
func (s *Server) fingerprintOf(c llmfleet.Credential) string {
	return fingerprint(s.Fingerprint, c)
}

var unauthorized = &apiError{http.StatusUnauthorized, "authentication_error", "invalid x-api-key"}

// missingKey answers a routed call that carries no credential, as the API
// answers one.
var missingKey = &apiError{http.StatusUnauthorized, "authentication_error", "x-api-key header is required"}

// upstreamCredential is the context key of the credential that replaces
// the client's on the way upstream.
type upstreamCredential struct{}
