-- 0009: a request names the provider endpoint its body is for
-- (Request.Endpoint: /v1/chat/completions, /v1/embeddings, ...; '' for the
-- provider's create-message endpoint), which a restart needs to batch it
-- again.
ALTER TABLE requests ADD COLUMN endpoint TEXT NOT NULL DEFAULT '';
