-- 0010: a request accepted and sent sync at once is stored submitted
-- without a batch: never pooled, but read by Pending (its call was cut by
-- the end of the process that made it). A result names the provider's
-- batch it came from ('' for an answer of the sync route), so that two
-- deliveries of one batch's result are told from two paid answers.
CREATE INDEX requests_sent_sync ON requests (accepted_at, id) WHERE state = 'submitted' AND batch_id IS NULL;
ALTER TABLE requests ADD COLUMN result_batch_id TEXT;
