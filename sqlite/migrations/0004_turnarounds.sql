-- 0004: observed batch turnarounds, per provider and model, that the
-- engine learns from and reads back at start.
--
-- turnaround is ended_at - created_at as the provider reported them
-- (nanoseconds), at is when the batch ended (Unix nanoseconds), size the
-- number of requests of the batch. seq orders samples with the same at.

CREATE TABLE turnarounds (
	seq        INTEGER PRIMARY KEY,
	provider   TEXT NOT NULL,
	model      TEXT NOT NULL,
	size       INTEGER NOT NULL,
	turnaround INTEGER NOT NULL,
	at         INTEGER NOT NULL
) STRICT;

-- The latest n samples of one provider and model are the last n entries
-- of its range in this index (seq, the rowid, ends every index entry), and
-- the distinct providers and models are found by seeking from one range
-- to the next.
CREATE INDEX turnarounds_latest ON turnarounds (provider, model, at);

-- Purge drops samples older than the ledger cutoff.
CREATE INDEX turnarounds_at ON turnarounds (at);
