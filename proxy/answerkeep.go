package proxy

import (
	"bytes"

	"github.com/llmfleet/llmfleet/jsonmember"
)

// answerKeeper keeps a JSON answer passing by, for the ledger to read its
// usage: whole up to limit, and past it only its top-level members named
// keys (at most 8), read as they pass, so that a long answer (many
// embeddings, an inline image) is still priced. The zero value with keys
// and limit set is ready to use.
type answerKeeper struct {
	keys  []string
	limit int
	raw   bytes.Buffer
	long  *jsonmember.Tap // past limit
}

// write keeps p, the answer's next piece.
func (k *answerKeeper) write(p []byte) {
	if k.long == nil && k.raw.Len()+len(p) <= k.limit {
		k.raw.Write(p)
		return
	}
	if k.long == nil {
		k.long = &jsonmember.Tap{Keys: k.keys}
		k.long.Write(k.raw.Bytes())
		k.raw = bytes.Buffer{}
	}
	k.long.Write(p)
}

// kept returns the answer kept: whole, or, for a long one, an object of
// the members it had of keys.
func (k *answerKeeper) kept() []byte {
	if k.long == nil {
		return k.raw.Bytes()
	}
	obj := []byte{'{'}
	for i, key := range k.keys {
		if v := k.long.Value(i); v != nil {
			if len(obj) > 1 {
				obj = append(obj, ',')
			}
			obj = append(append(append(obj, jsonString(key)...), ':'), v...)
		}
	}
	return append(obj, '}')
}
