package claude

import (
	"net/http"
	"strings"

	"github.com/llmfleet/llmfleet"
)

// setHeaders sets the headers of an upstream request: the credential, the
// anthropic-version, every anthropic-* header of pass (all values, so that a
// repeated anthropic-beta survives) and the content type. No other header of
// pass is sent; in particular llmfleet-* headers never leave the process.
func (p *Provider) setHeaders(h http.Header, cred llmfleet.Credential, pass http.Header, hasBody bool) {
	for k, vs := range pass {
		lk := strings.ToLower(k)
		if !strings.HasPrefix(lk, "anthropic-") || len(vs) == 0 {
			continue
		}
		h[http.CanonicalHeaderKey(k)] = append([]string(nil), vs...)
	}
	if h.Get("Anthropic-Version") == "" {
		h.Set("Anthropic-Version", p.version())
	}
	switch {
	case cred.APIKey != "":
		h.Set("X-Api-Key", cred.APIKey)
	case cred.AuthToken != "":
		h.Set("Authorization", "Bearer "+cred.AuthToken)
	}
	if hasBody {
		h.Set("Content-Type", "application/json")
	}
	h.Set("Accept", "application/json")
}
