package proxy

import (
	"net/http"
	"sync"

	"github.com/llmfleet/llmfleet"
)

// This file names the client of a create-message call for spend
// attribution: the ledger entries of the sync route and the Requests given
// to the Submitter carry it (llmfleet.LedgerEntry.Client, Request.Client).

// clientOf names the client that presented a credential: the name
// ClientName gives, else the credential's key label (see fingerprint),
// never the key itself; "" for no credential.
func (s *Server) clientOf(presented llmfleet.Credential) string {
	if s.ClientName != nil {
		if name := s.ClientName(presented); name != "" {
			return name
		}
	}
	if presented.IsZero() {
		return ""
	}
	return s.ownerName(presented)
}

// Name returns the configured name of the client presenting a known key,
// as x-api-key or as a bearer token, or "" for an unknown key. It fits
// Server.ClientName, so that in proxy-held-key mode the ledger names
// clients as the configuration does.
func (k *ClientKeys) Name(presented llmfleet.Credential) string {
	name, _ := k.lookup(presented)
	return name
}

// lookup returns the name of the client presenting a known key.
func (k *ClientKeys) lookup(presented llmfleet.Credential) (string, bool) {
	for _, key := range [...]string{presented.APIKey, presented.AuthToken} {
		if key == "" {
			continue
		}
		if name, ok := k.Hashes[HashKey(key)]; ok {
			return name, true
		}
	}
	return "", false
}

// clientName names the client of a presented credential (clientOf),
// computed once, when first asked: on the sync route that is after the
// answer went out, so that the keyed hash is not the caller's wait. The
// access log and the ledger entry of a request share one.
type clientName struct {
	s    *Server
	cred llmfleet.Credential
	once sync.Once
	name string
}

// String returns the name; "" for a nil clientName.
func (n *clientName) String() string {
	if n == nil {
		return ""
	}
	n.once.Do(func() { n.name = n.s.clientOf(n.cred) })
	return n.name
}

// clientNameOf returns the clientName of cred, presented with r: the
// access record's when it names the same credential.
// A new one is made in own, which the caller holds.
func (s *Server) clientNameOf(r *http.Request, cred llmfleet.Credential, own *clientName) *clientName {
	if cred.IsZero() && s.ClientName == nil {
		return nil
	}
	if a := accessOf(r.Context()); a != nil && a.key != nil && a.key.cred == cred {
		return a.key
	}
	*own = clientName{s: s, cred: cred}
	return own
}
