-- What each client paid by UTC day (issue 24: spend limits), shared by
-- the fleet's replicas.
--
-- client_spend holds, per client (the entry's "client") and UTC day (its
-- number since the Unix epoch), the sum of the cost of its ledger
-- entries; the transaction adding entries adds to it (an upsert:
-- replicas adding at once lose none). The entries already kept are
-- summed here.

CREATE TABLE client_spend (
	client text NOT NULL,
	day    bigint NOT NULL,
	usd    double precision NOT NULL,
	PRIMARY KEY (client, day)
);

INSERT INTO client_spend (client, day, usd)
	SELECT e->>'client', time / 86400000000000, sum((e->>'cost_usd')::double precision)
	FROM (SELECT time, convert_from(entry, 'UTF8')::jsonb AS e FROM ledger) l
	WHERE coalesce(e->>'client', '') <> '' AND coalesce((e->>'cost_usd')::double precision, 0) <> 0
	GROUP BY e->>'client', time / 86400000000000;
