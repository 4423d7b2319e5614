-- 0006: spend attribution. The ledger names the client of each entry (a
-- keyed fingerprint of its key, or its configured name), and a request
-- accepted for batching keeps it, so that the entry written when it is
-- answered, after a restart too, names it.

ALTER TABLE ledger ADD COLUMN client TEXT NOT NULL DEFAULT '';
ALTER TABLE requests ADD COLUMN client TEXT NOT NULL DEFAULT '';
