-- 0001: requests accepted for batching, batches, sealed credentials, ledger.
-- Times are Unix nanoseconds (NULL: none).

CREATE TABLE credentials (
	id     TEXT PRIMARY KEY,
	sealed BLOB NOT NULL
) STRICT;

CREATE TABLE batches (
	id            TEXT PRIMARY KEY,
	provider      TEXT NOT NULL,
	credential_id TEXT NOT NULL,
	upstream_id   TEXT,
	state         TEXT NOT NULL,
	size          INTEGER NOT NULL,
	intent_at     INTEGER,
	created_at    INTEGER,
	ended_at      INTEGER
) STRICT;

CREATE INDEX batches_pending ON batches (state, intent_at) WHERE state IN ('intent', 'created');

CREATE TABLE requests (
	id            TEXT PRIMARY KEY,
	provider      TEXT NOT NULL,
	credential_id TEXT NOT NULL,
	header        BLOB,
	body          BLOB NOT NULL,
	model         TEXT NOT NULL,
	budget        INTEGER NOT NULL,
	accepted_at   INTEGER,
	deadline      INTEGER,
	state         TEXT NOT NULL,
	batch_id      TEXT REFERENCES batches (id),
	custom_id     TEXT,
	status_code   INTEGER,
	result_body   BLOB,
	usage         BLOB,
	completed_at  INTEGER
) STRICT;

CREATE INDEX requests_queued ON requests (accepted_at, id) WHERE state = 'queued';
CREATE INDEX requests_batch ON requests (batch_id) WHERE batch_id IS NOT NULL;
CREATE UNIQUE INDEX requests_custom_id ON requests (batch_id, custom_id) WHERE batch_id IS NOT NULL;
CREATE INDEX requests_done ON requests (completed_at) WHERE state = 'done';

CREATE TABLE ledger (
	seq             INTEGER PRIMARY KEY,
	time            INTEGER NOT NULL,
	request_id      TEXT NOT NULL,
	provider        TEXT NOT NULL,
	model           TEXT NOT NULL,
	route           TEXT NOT NULL,
	outcome         TEXT NOT NULL,
	usage           BLOB NOT NULL,
	cost_usd        REAL NOT NULL,
	other_route_usd REAL NOT NULL,
	priced          INTEGER NOT NULL,
	queued          INTEGER NOT NULL,
	turnaround      INTEGER NOT NULL,
	latency         INTEGER NOT NULL,
	budget          INTEGER NOT NULL,
	budget_met      INTEGER NOT NULL
) STRICT;

CREATE INDEX ledger_time ON ledger (time);
