package proxy

import (
	"sync"

	"github.com/llmfleet/llmfleet"
)

// maxKeyNames bounds the client keys whose names a keyNames remembers;
// when full it starts over.
const maxKeyNames = 1024

// keyNames remembers the names (Server.Fingerprint, a keyed hash) of the
// client keys seen lately, so that a key calling again is not hashed
// again on every request. The zero value is ready.
type keyNames struct {
	mu    sync.Mutex
	names map[llmfleet.Credential]string
}

// name returns the name of key, from memory or else from fingerprint,
// which is called without the lock held.
func (k *keyNames) name(key llmfleet.Credential, fingerprint func(llmfleet.Credential) string) string {
	k.mu.Lock()
	name, ok := k.names[key]
	k.mu.Unlock()
	if ok {
		return name
	}
	name = fingerprint(key)
	k.mu.Lock()
	if k.names == nil || len(k.names) >= maxKeyNames {
		k.names = make(map[llmfleet.Credential]string)
	}
	k.names[key] = name
	k.mu.Unlock()
	return name
}
