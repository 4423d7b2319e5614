package proxy

import (
	"crypto/sha256"
	"net/http"
)

// This file gives a batched request with an Idempotency-Key header an id
// of its own: the same key from the same client names the same request,
// so that a retry (after a dropped connection, or a crash of the proxy)
// attaches to the request accepted the first time, or gets its stored
// answer, instead of being sent and paid again. The dispatcher does the
// attaching (a request id already accepted is never accepted twice).

// HeaderIdempotencyKey is the header by which a caller makes its retries
// of a batched create-message call safe.
const HeaderIdempotencyKey = "Idempotency-Key"

// idempotencyKey returns the request's Idempotency-Key, "" if none, and
// false if it is malformed: empty, longer than 255 bytes, or with a byte
// that is not visible ASCII.
func idempotencyKey(h http.Header) (string, bool) {
	vs, ok := h[HeaderIdempotencyKey]
	if !ok {
		return "", true
	}
	if len(vs) != 1 || len(vs[0]) == 0 || len(vs[0]) > 255 {
		return "", false
	}
	for i := 0; i < len(vs[0]); i++ {
		if b := vs[0][i]; b < 0x21 || b > 0x7e {
			return "", false
		}
	}
	return vs[0], true
}

// idempotentID is the request id of key sent by the client named owner
// (its key's keyed name, see Server.ownerName): "lfr_" and 24 characters,
// as llmfleet.NewID makes them. Different owners never share an id.
func idempotentID(owner, key string) string {
	const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	sum := sha256.Sum256([]byte("llmfleet idempotency\x00" + owner + "\x00" + key))
	b := make([]byte, 0, 28)
	b = append(b, "lfr_"...)
	for _, c := range sum[:24] {
		b = append(b, alphabet[int(c)%len(alphabet)])
	}
	return string(b)
}
