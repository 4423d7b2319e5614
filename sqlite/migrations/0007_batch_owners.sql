-- 0006: the owners of the batches clients created through the proxy's
-- pass-through Message Batches API in proxy-held-key mode, where every
-- client's batch is made under the one upstream key. owner is the keyed
-- name of the client key (never the key); at is when it was recorded
-- (Unix nanoseconds). A batch made by llmfleet itself has no row.

CREATE TABLE batch_owners (
	batch_id TEXT PRIMARY KEY,
	owner    TEXT NOT NULL,
	at       INTEGER NOT NULL
) STRICT;
