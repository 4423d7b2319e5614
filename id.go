package llmfleet

import "crypto/rand"

// NewID returns a random id with the given prefix, in the shape of the
// API's ids (24 base-62 characters).
func NewID(prefix string) string {
	const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	var b [24]byte
	rand.Read(b[:])
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return prefix + string(b[:])
}
