// Package geminiemu emulates the part of the Gemini API
// (generativelanguage.googleapis.com, v1beta) that llmfleet uses, for tests
// and demos, as strictly as the real API answers:
//
//   - POST /v1beta/models/{model}:generateContent and
//     :streamGenerateContent (?alt=sse: data-only events ended by CRLF
//     CRLF; without it, a JSON array of chunks), with serviceTier "flex":
//     served after Server.FlexLatency (or Server.FlexDelay's draw) on the
//     Clock, or shed by Server.Shed
//     with 503 UNAVAILABLE or 429 RESOURCE_EXHAUSTED carrying a RetryInfo;
//     the served tier in the x-gemini-service-tier header and
//     usageMetadata.serviceTier.
//   - Batch Mode: POST /v1beta/models/{model}:batchGenerateContent with
//     inline requests (at most 20 MB) or an uploaded JSONL file
//     (inputConfig.fileName), GET /v1beta/batches/{id}, GET /v1beta/batches
//     (pageSize, pageToken; newest first), POST /v1beta/batches/{id}:cancel,
//     DELETE /v1beta/batches/{id}. A batch is PENDING for
//     Server.BatchPending, RUNNING until Server.BatchTurnaround after its
//     create, then SUCCEEDED with its answers inline (in request order, each
//     with the request's metadata) or in a responses file; at 48 h unended
//     it is EXPIRED. A cancel ends it CANCELLED at the next look, answering
//     the share of its requests its elapsed time reached.
//   - The Files API: the resumable upload of the SDKs (POST
//     /upload/v1beta/files, start then upload/finalize at the upload URL),
//     GET/DELETE /v1beta/files/{id}, GET /v1beta/files, and the download of
//     a file's bytes at /download/v1beta/files/{id}:download?alt=media (and
//     /v1beta/files/{id}:download?alt=media, where the Go SDK asks).
//
// The Server may be mounted under a path (http.StripPrefix): the URLs it
// hands out (the upload URL, a file's uri and downloadUri) keep the prefix.
//
// Credentials: x-goog-api-key or ?key=; none is 403 PERMISSION_DENIED, one
// not in Server.Keys 400 INVALID_ARGUMENT with reason API_KEY_INVALID, as
// the API answers. Batches and files belong to the key that made them;
// another key gets 404 for a batch and 403 for a file.
//
// Bodies are checked as the API checks them: unknown members of the
// request or of generationConfig, empty contents, an unknown model (404
// NOT_FOUND), a body's model other than the path's, an unknown
// serviceTier are refused with 400 INVALID_ARGUMENT in Google's envelope.
//
// Replies are deterministic: "Answer to: <last user text>"; token counts
// are word counts; models whose id starts with "gemini-2.5" or "gemini-3"
// think (thoughtsTokenCount twice the answer's, none with thinkingBudget
// 0); a systemInstruction seen before by the key for the model counts as
// cachedContentTokenCount (implicit caching). A prompt containing
// "[error:<STATUS>]" fails with that canonical status, at once or as the
// request's error inside a batch. Server.Fault injects errors or dropped
// connections on any path (DropConnection: unprocessed; DropAnswer:
// processed, a create's batch made, its answer dropped), and
// Server.LandAfter makes a create land late (its connection dropped, its
// batch there only later). For crash tests, Stats counts the batches
// created by displayName (llmfleet's tag), their requests (Submissions,
// each paid for once its batch runs) and the reads of ended batches;
// BatchesCreated counts a key's.
//
// Also GET /v1beta/models, GET /v1beta/models/{model} and :countTokens
// (word counts, as the answers count).
//
// The stable version, /v1 (the @google/genai SDK's default), serves the
// model methods (generateContent, streamGenerateContent, countTokens) and
// the models' reads as /v1beta does; Batch Mode and the Files API are
// /v1beta only (404 under /v1).
//
// Not modelled: tools, media parts, safety blocks, explicit caches, rate limits, batch priority and webhooks,
// embeddings batches; what the real API writes for the requests a cancel or
// the expiry stopped is unverified (here: a CANCELLED or DEADLINE_EXCEEDED
// error per request).
package geminiemu
