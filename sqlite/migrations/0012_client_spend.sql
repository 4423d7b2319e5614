-- 0012: what each client paid by UTC day (issue 24: spend limits).
--
-- client_spend holds, per client (LedgerEntry.Client) and UTC day (its
-- number since the Unix epoch), the sum of the cost of its ledger
-- entries; the transaction adding entries adds to it. The entries of the
-- ledger table are summed here; those of ledger_blocks are summed by the
-- migration's Go step (migrate.go), which decodes them.

CREATE TABLE client_spend (
	client TEXT NOT NULL,
	day    INTEGER NOT NULL,
	usd    REAL NOT NULL,
	PRIMARY KEY (client, day)
) STRICT;

INSERT INTO client_spend (client, day, usd)
	SELECT client, time / 86400000000000, sum(cost_usd) FROM ledger
	WHERE client <> '' AND cost_usd <> 0 GROUP BY client, time / 86400000000000;
