-- A request accepted and sent sync at once is stored submitted without a
-- batch: never claimed, but adopted like a queued one (its call was cut
-- by the end of the run that made it) and read by Pending. A result
-- names the provider's batch it came from ('' for an answer of the sync
-- route), so that two deliveries of one batch's result (by the replica
-- that created the batch and by one that adopted it) are told from two
-- paid answers.

CREATE INDEX requests_sent_sync ON requests (owner) WHERE state = 'submitted' AND batch_id IS NULL;
ALTER TABLE requests ADD COLUMN result_batch_id text;
