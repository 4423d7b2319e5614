-- 0008: ledger entries are written in blocks, one row per write (a group
-- commit of the ledger writer, or the entries of one completion
-- transaction), in the binary encoding of ledgerblock.go. A row per entry
-- cost more CPU than the sync route's proxying itself at high request
-- rates. Entries written before stay in the ledger table; reads and purges
-- cover both.
CREATE TABLE ledger_blocks (
	seq        INTEGER PRIMARY KEY,
	first_time INTEGER NOT NULL,
	last_time  INTEGER NOT NULL,
	entries    INTEGER NOT NULL,
	data       BLOB NOT NULL
) STRICT;

CREATE INDEX ledger_blocks_last_time ON ledger_blocks (last_time);
