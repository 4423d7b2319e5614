-- 0002: the ledger names the batch that answered a batched request, so
-- that a period's batch count can be read from the ledger alone.
ALTER TABLE ledger ADD COLUMN batch_id TEXT NOT NULL DEFAULT '';
