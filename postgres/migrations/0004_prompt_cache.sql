-- What the cost model learns of prompt caches (issue 21), shared by the
-- fleet's replicas.
--
-- cache_stats counts, per provider, model, credential, the cache a
-- lookup used (lookup: 'sync' or 'batch') and the cache believed to hold
-- the entry (entry), the lookups and how many hit; AddCacheStats adds to
-- the counts (an upsert: replicas adding at once lose none).
--
-- prefixes holds what is known of a prompt prefix under a credential:
-- its size in tokens (0: not known) and until when the sync and batch
-- caches hold it, and when it was last seen, as Unix nanoseconds (NULL:
-- not known). Purge drops the prefixes last seen before the results'
-- cutoff.

CREATE TABLE cache_stats (
	provider      text NOT NULL,
	model         text NOT NULL,
	credential_id text NOT NULL,
	lookup        text NOT NULL,
	entry         text NOT NULL,
	lookups       bigint NOT NULL,
	hits          bigint NOT NULL,
	PRIMARY KEY (provider, model, credential_id, lookup, entry)
);

CREATE TABLE prefixes (
	credential_id text NOT NULL,
	hash          text NOT NULL,
	tokens        bigint NOT NULL,
	sync_until    bigint,
	batch_until   bigint,
	seen_at       bigint,
	PRIMARY KEY (credential_id, hash)
);

CREATE INDEX prefixes_seen ON prefixes (seen_at);
