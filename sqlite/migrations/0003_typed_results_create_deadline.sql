-- 0003: typed results and the create deadline of a batch intent.
--
-- result_error holds the JSON of the error a request ended with (an
-- llmfleet.ResultError, without its body) and the JSON null for a
-- success: every row completed from this schema on has it. Its body,
-- the provider's error envelope, is in result_body, where a success keeps
-- the answer. A done row where it is NULL was completed by schema 2,
-- whose result_body holds the answer (status 200) or a rendered error
-- envelope (any other status); see scanRequest.
ALTER TABLE requests ADD COLUMN result_error BLOB;

-- create_deadline is the deadline of the batch's create call (Unix
-- nanoseconds; NULL: none, as for every batch recorded by schema 2).
ALTER TABLE batches ADD COLUMN create_deadline INTEGER;
