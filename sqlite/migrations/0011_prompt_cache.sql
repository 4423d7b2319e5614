-- 0011: what the cost model learns of prompt caches (issue 21).
--
-- cache_stats counts, per provider, model, credential, the cache a
-- lookup used (lookup: 'sync' or 'batch') and the cache believed to hold
-- the entry (entry), the lookups and how many hit; AddCacheStats adds to
-- the counts.
--
-- prefixes holds what is known of a prompt prefix under a credential:
-- its size in tokens (0: not known) and until when the sync and batch
-- caches hold it, and when it was last seen, as Unix nanoseconds (NULL:
-- not known). Purge drops the prefixes last seen before the results'
-- cutoff.

CREATE TABLE cache_stats (
	provider      TEXT NOT NULL,
	model         TEXT NOT NULL,
	credential_id TEXT NOT NULL,
	lookup        TEXT NOT NULL,
	entry         TEXT NOT NULL,
	lookups       INTEGER NOT NULL,
	hits          INTEGER NOT NULL,
	PRIMARY KEY (provider, model, credential_id, lookup, entry)
) STRICT, WITHOUT ROWID;

CREATE TABLE prefixes (
	credential_id TEXT NOT NULL,
	hash          TEXT NOT NULL,
	tokens        INTEGER NOT NULL,
	sync_until    INTEGER,
	batch_until   INTEGER,
	seen_at       INTEGER,
	PRIMARY KEY (credential_id, hash)
) STRICT, WITHOUT ROWID;

CREATE INDEX prefixes_seen ON prefixes (seen_at);
