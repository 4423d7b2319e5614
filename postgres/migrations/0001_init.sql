-- llmfleet's state on PostgreSQL: the tables of the SQLite store, times
-- as Unix nanoseconds (bigint: timestamptz keeps microseconds only).

CREATE TABLE credentials (
	id     text PRIMARY KEY,
	sealed bytea NOT NULL
);

CREATE TABLE batches (
	id              text PRIMARY KEY,
	provider        text NOT NULL,
	credential_id   text NOT NULL,
	upstream_id     text,
	state           text NOT NULL,
	size            integer NOT NULL,
	intent_at       bigint,
	created_at      bigint,
	ended_at        bigint,
	create_deadline bigint
);

CREATE INDEX batches_pending ON batches (intent_at) WHERE state IN ('intent', 'created');

CREATE TABLE requests (
	id            text PRIMARY KEY,
	provider      text NOT NULL,
	credential_id text NOT NULL,
	header        bytea,
	body          bytea NOT NULL,
	model         text NOT NULL,
	budget        bigint NOT NULL,
	accepted_at   bigint,
	deadline      bigint,
	state         text NOT NULL,
	batch_id      text REFERENCES batches (id),
	custom_id     text,
	status_code   integer,
	result_body   bytea,
	result_error  bytea,
	usage         bytea,
	completed_at  bigint,
	client        text NOT NULL DEFAULT '',
	endpoint      text NOT NULL DEFAULT ''
);

CREATE INDEX requests_queued ON requests (accepted_at) WHERE state = 'queued';
CREATE INDEX requests_batch ON requests (batch_id);

-- One row per entry, the entry as JSON.
CREATE TABLE ledger (
	seq   bigserial PRIMARY KEY,
	time  bigint NOT NULL,
	entry bytea NOT NULL
);

CREATE INDEX ledger_time ON ledger (time);

CREATE TABLE turnarounds (
	seq        bigserial PRIMARY KEY,
	provider   text NOT NULL,
	model      text NOT NULL,
	size       integer NOT NULL,
	turnaround bigint NOT NULL,
	at         bigint NOT NULL
);

CREATE INDEX turnarounds_latest ON turnarounds (provider, model, at);

CREATE TABLE batch_owners (
	batch_id text PRIMARY KEY,
	owner    text NOT NULL,
	at       bigint NOT NULL
);
