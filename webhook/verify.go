// Package webhook takes a provider's webhooks in: OpenAI's batch events,
// signed as Standard Webhooks deliveries, make the engine look at the
// batch they name at once (see OpenAI). A webhook is a hint, never a
// replacement for polling: a batch whose webhook never came, or came to
// another replica, is found ended by its polls all the same.
package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Tolerance is how far a delivery's webhook-timestamp may be from now,
// in the past or in the future, before it is refused as a replay.
const Tolerance = 5 * time.Minute

// secretPrefix begins a Standard Webhooks secret, its key in base64.
const secretPrefix = "whsec_"

// minSecretBytes is the shortest key a whsec_ secret may hold.
const minSecretBytes = 24

// ParseSecret returns the signing key of a webhook secret: the bytes
// that follow "whsec_" in standard base64 (as OpenAI's dashboard gives
// it, at least 24 of them), or the secret's own bytes without that
// prefix.
func ParseSecret(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	enc, prefixed := strings.CutPrefix(s, secretPrefix)
	if !prefixed {
		if s == "" {
			return nil, errors.New("the webhook secret is empty")
		}
		return []byte(s), nil
	}
	key, err := base64.StdEncoding.Strict().DecodeString(enc)
	if err != nil {
		return nil, fmt.Errorf("a whsec_ secret is followed by standard base64: %v", err)
	}
	if len(key) < minSecretBytes {
		return nil, fmt.Errorf("a whsec_ secret holds at least %d bytes, this one %d", minSecretBytes, len(key))
	}
	return key, nil
}

// Sign returns the webhook-signature header of a delivery of body made
// with id at ts, as a sender computes it: "v1," and the base64 of the
// HMAC-SHA256 of "id.timestamp.body" under key.
func Sign(key []byte, id string, ts time.Time, body []byte) string {
	return "v1," + base64.StdEncoding.EncodeToString(mac(key, id, strconv.FormatInt(ts.Unix(), 10), body))
}

func mac(key []byte, id, ts string, body []byte) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(id))
	h.Write([]byte{'.'})
	h.Write([]byte(ts))
	h.Write([]byte{'.'})
	h.Write(body)
	return h.Sum(nil)
}

// Refusal is why a delivery was refused: Status is 400 for a missing or
// malformed header or a timestamp out of Tolerance, 401 for a signature
// that does not match.
type Refusal struct {
	Status int
	Code   string // a short name of the cause, e.g. "stale_timestamp"
	Msg    string
}

func (r *Refusal) Error() string { return r.Msg }

// Verify checks a Standard Webhooks delivery of body with headers h
// against key at now: webhook-id, webhook-timestamp (Unix seconds,
// within Tolerance of now) and webhook-signature (space-separated
// "v1,<base64>" entries, one of which must be the delivery's HMAC). It
// returns nil or a *Refusal.
func Verify(key []byte, h http.Header, body []byte, now time.Time) error {
	id, ts, sigs := h.Get("Webhook-Id"), h.Get("Webhook-Timestamp"), h.Get("Webhook-Signature")
	for _, m := range []struct{ name, v string }{{"webhook-id", id}, {"webhook-timestamp", ts}, {"webhook-signature", sigs}} {
		if m.v == "" {
			return &Refusal{http.StatusBadRequest, "missing_header", "The header " + m.name +
				" is missing: this endpoint takes signed Standard Webhooks deliveries (webhook-id, webhook-timestamp, webhook-signature)."}
		}
	}
	secs, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return &Refusal{http.StatusBadRequest, "invalid_timestamp", "The webhook-timestamp " + strconv.Quote(ts) + " is not a number of seconds since 1970."}
	}
	if at := time.Unix(secs, 0); now.Sub(at) > Tolerance || at.Sub(now) > Tolerance {
		return &Refusal{http.StatusBadRequest, "stale_timestamp", fmt.Sprintf("The webhook-timestamp %s is more than %s from this server's time %s: "+
			"refused as a possible replay (check the clocks).", at.UTC().Format(time.RFC3339), Tolerance, now.UTC().Format(time.RFC3339))}
	}
	want := mac(key, id, ts, body)
	for _, s := range strings.Fields(sigs) {
		v, ok := strings.CutPrefix(s, "v1,")
		if !ok {
			continue // another scheme's signature
		}
		got, err := base64.StdEncoding.DecodeString(v)
		if err == nil && hmac.Equal(got, want) {
			return nil
		}
	}
	return &Refusal{http.StatusUnauthorized, "invalid_signature", "No v1 signature of webhook-signature matches this delivery " +
		"under the configured secret: check that it is the endpoint's signing secret (whsec_...) in OpenAI's dashboard."}
}
