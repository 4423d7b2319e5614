-- Several replicas, one fleet: every process has a lease; queued
-- requests and batches in flight have an owner, whose lease ending lets
-- another process adopt them. A request's pool names the requests it may
-- share a batch with, across replicas.

CREATE TABLE replicas (
	id          text PRIMARY KEY,
	name        text NOT NULL,
	started_at  timestamptz NOT NULL,
	lease_until timestamptz NOT NULL
);

ALTER TABLE requests ADD COLUMN pool text NOT NULL DEFAULT '';
ALTER TABLE requests ADD COLUMN owner text NOT NULL DEFAULT '';
ALTER TABLE batches ADD COLUMN owner text NOT NULL DEFAULT '';

CREATE INDEX requests_pool ON requests (pool, accepted_at) WHERE state = 'queued';
CREATE INDEX requests_owner ON requests (owner) WHERE state = 'queued';
CREATE INDEX batches_owner ON batches (owner) WHERE state IN ('intent', 'created');
