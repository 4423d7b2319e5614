package llmfleet

import "time"

// CacheStat counts the prompt-cache lookups of one provider, model and
// credential whose longest prefix was believed cached: by the cache the
// lookup used (Lookup: RouteSync for sync and flex calls, RouteBatch for
// batch items) and the cache believed to hold the entry (Entry: the
// same, or the other), how many there were and how many hit. The cost
// model learns its hit rates from them.
type CacheStat struct {
	Provider, Model, CredentialID string
	Lookup, Entry                 Route
	Lookups, Hits                 int64
}

// PrefixState is what is known of one prompt prefix under a credential:
// its size in tokens (learned from usage; 0: not known) and until when
// the sync cache and the batch cache hold it (zero: not known to).
type PrefixState struct {
	CredentialID, Hash    string
	Tokens                int64
	SyncUntil, BatchUntil time.Time
	// SeenAt is when it was last seen (Purge drops it after the
	// results' retention).
	SeenAt time.Time
}
