// Package openaiemu emulates a part of the OpenAI HTTP API for tests and
// demos: POST /v1/chat/completions (plain and streamed, usage null on every
// chunk but the last under include_usage), POST /v1/responses (plain and
// streamed with the API's event sequence, from response.created to
// response.completed, the usage only under response in the latter) and POST
// /v1/embeddings (encoding_format float or base64), behind "Authorization:
// Bearer" keys, with the flex service tier.
//
// Replies are deterministic: a chat answer is "Answer to: <last user
// text>", token counts are word counts, an embedding is derived from a hash
// of its input. A request asking service_tier "flex" for a model not in
// Server.FlexModels gets the 400 the real API sends; flex requests can be
// refused with 429 resource_unavailable by Server.FlexUnavailable, unbilled.
//
// Errors use the OpenAI envelope {"error":{"message","type","param","code"}}.
// A chat prompt containing "[error:<type>]" is failed with that type
// (server_error 500, rate_limit_exceeded 429, permission_error 403, any
// other 400), unbilled: at once, or as a line of a batch's error file.
//
// Files and batches: POST/GET /v1/files, GET/DELETE /v1/files/{id}, GET
// /v1/files/{id}/content, POST/GET /v1/batches, GET /v1/batches/{id}, POST
// /v1/batches/{id}/cancel, owned by the key and project that made them. A
// batch is validated as the API does (unique custom_id, POST, url equal to
// the batch's endpoint, one model per file, at most 50,000 lines; else it
// turns failed with errors.data naming the line, after a create that
// answered 200) and may fail after its create with token_limit_exceeded
// (Server.EnqueuedTokenLimit). It is in_progress for
// Server.BatchTurnaround, then completed: each line is answered by the
// endpoint's own handler (so a batched answer is the sync answer, its
// service_tier included, and is billed once), HTTP errors (an injected
// Fault, a bad body) go to the error file with their status and envelope,
// output lines shuffled. Cancelled or expired (at 24 h) batches answer the
// share of their lines their elapsed time reached; the rest are
// batch_cancelled or batch_expired lines of the error file.
//
// Not modelled: tools, images, audio, logprobs (always empty), reasoning
// items and the other events of a /v1/responses stream, rate limits, batch webhooks, the cancelling delay (a
// cancelled batch is cancelled at the next look), the finalizing step
// (seen only while lines are being answered).
package openaiemu
