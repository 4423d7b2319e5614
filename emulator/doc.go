// Package emulator is a local stand-in for the Anthropic Messages and
// Message Batches HTTP APIs. Tests, the demo and the benchmarks run against
// it, and users can test their fleets offline with it ("llmfleet emulate").
// It implements the wire formats on its own, as an independent check of
// llmfleet's client.
//
// # Endpoints
//
//	POST   /v1/messages                          create a message (JSON or SSE stream)
//	POST   /v1/messages/count_tokens             count input tokens
//	POST   /v1/messages/batches                  create a batch
//	GET    /v1/messages/batches                  list batches (limit, after_id, before_id)
//	GET    /v1/messages/batches/{id}             retrieve a batch
//	POST   /v1/messages/batches/{id}/cancel      cancel a batch
//	DELETE /v1/messages/batches/{id}             delete an ended batch
//	GET    /v1/messages/batches/{id}/results     results JSONL
//	GET    /v1/models                            list models, newest first (limit, after_id, before_id)
//	GET    /v1/models/{model_id}                 one model (404 not_found_error if unknown)
//	GET    /emulator/v1/stats                    the emulator's Stats as JSON (not in the real API)
//
// Every request needs an API key (x-api-key, or Authorization: Bearer) and
// anthropic-version (2023-06-01, or 2026-10-21 as the newer SDK majors
// send); X-Stainless-* headers, anthropic-beta
// values and the ?beta=true query are ignored. Every response carries a
// request-id header, and every error the envelope
// {"type":"error","error":{"type":...,"message":...},"request_id":...}.
//
// Messages may have the role "user", "assistant" or "system" (a
// mid-conversation system message, which the real API and current Claude
// Code releases send), in sync, streamed and batched requests alike. The
// models listed are the Anthropic models of the price table (Server.Models).
// As on the real API, an unknown model is refused with 404 not_found_error
// "model: <id>" (TestModel is served for tests of unpriced traffic), an
// answer to an alias names its dated id (claude-haiku-4-5 is answered by
// claude-haiku-4-5-20251001; Server.ModelIDs), usage carries inference_geo
// and a message no container member, and a GET of a batch still processing
// answers Retry-After: 10 (Server.BatchRetryAfter).
//
// # Replies
//
// The reply is a pure function of the request body. Its text is "Answer to:
// " followed by the text of the last user message (ReplyText computes it);
// its id is "msg_01" plus a hash of the body, ignoring its layout and its
// "stream" member (MessageID), so a streamed reply equals the plain one. If tools are given
// and the last user text contains "[tool]", or tool_choice is "any" or
// "tool", the reply also carries a tool_use block (the chosen tool, or the
// first one, with input {"query": <last user text>}) and stops with
// "tool_use". With thinking "enabled" or "adaptive" a thinking block with a
// signature comes first. stop_sequences cut the text where they occur, and
// max_tokens cuts the output where its tokens run out. A body with
// max_tokens 0 (a cache pre-warm, sync and non-streaming only) gets empty
// content, stop_reason "max_tokens" and output_tokens 0.
//
// # Directives
//
// Directives in the text of the last user message drive test scenarios:
//
//	[tool]              answer with a tool_use block when tools are given
//	[error:<type>]      fail with that error type and its status, e.g.
//	                    [error:overloaded_error] is a 529; inside a batch the
//	                    request's result is "errored" with that type
//	[expire]            inside a batch, the request's result is "expired"
//	[slow:<duration>]   delay a synchronous reply, e.g. [slow:3s]
//	[turnaround:<dur>]  inside a batch, the request takes this long, which
//	                    lengthens its batch (e.g. [turnaround:25h] expires it)
//
// # Usage and prompt caching
//
// The prompt is flattened into blocks: each tool, each system block (a
// system string is one block) and each message content block (a string
// content is one block). A block of n bytes of JSON counts ceil(n/4) input
// tokens. Output tokens are a quarter of the reply's characters (thinking,
// text and tool input JSON) plus one, so never 0 for a real reply.
//
// A block with cache_control {"type":"ephemeral","ttl":"5m"|"1h"} is a
// breakpoint (a top-level cache_control marks the last block; at most four
// breakpoints; a 1h one may not follow a 5m one). The prefix up to a
// breakpoint is identified by the model and the exact bytes of its
// blocks; the cache is package cachesim's: per API key, a sync cache (sync
// and streamed messages) and a batch cache (batch requests, at the time
// each finishes), entries apart. For each request: the hit is the longest
// live prefix found, by looking back at most 20 blocks from each
// breakpoint, in a cache the request reaches: its own route's with
// probability SyncHitRate or BatchHitRate (best effort on the real API),
// the other route's with probability CrossRate (Server.Cache; by default
// 1, 1 and 0), drawn from a source seeded by Seed and the request. Its
// tokens are reported as cache_read_input_tokens and its TTL is
// refreshed. The breakpoints past the hit are written, into the request's
// own route's cache: tokens up to the last 1h breakpoint count as
// ephemeral_1h_input_tokens, the rest up to the last breakpoint as
// ephemeral_5m_input_tokens (their sum is cache_creation_input_tokens).
// input_tokens is what lies after the last breakpoint or hit, at least 1.
// Server.CacheMinTokens sets a minimum cacheable prefix (none by default).
// InputTokens computes the uncached count of a body.
// Sync replies say service_tier "standard", batch results "batch".
//
// # Batches
//
// Batch state is derived from Server.Clock on each request, with no
// background goroutines. A batch ends Server.Turnaround after its creation
// (the longest over its distinct models); its requests stay "processing"
// until then and finish at random points within that time, when they run
// (in time order with every other request, for the prompt cache), which
// matters for the cache and for cancel: a canceled batch stays "canceling" for
// Server.CancelDelay, requests finished by then succeed and the others are
// "canceled". A batch still running 24h after creation ends as expired:
// unfinished requests are "expired". Batch params are validated when the
// batch runs, so bad params come back as "errored" results; only envelope
// problems (custom_id pattern, duplicates, 1..100000 requests, 256 MB)
// fail the create. Results come back shuffled (deterministically, by Seed).
// Results are kept 29 days after creation (archived_at).
//
// Deviations from the real API: batches and the prompt cache are scoped per
// API key, not per workspace; a request reaches a cache with a fixed
// probability, whatever the traffic; both API versions get the same rules
// (the stricter request checks of 2026-10-21, such as refusing
// temperature, top_p and top_k, are not enforced); replies are canned
// text; ids are deterministic; token counts are the byte-based estimate
// above.
//
// # Faults
//
// Server.InjectFault makes the next matching requests fail: any status and
// error type, retry-after, retry-after-ms, x-should-retry, the spend-cap
// 429 (ErrorCode), delays, dropped connections before or after the request
// body, dropped responses after processing, errors answered after
// processing (AfterProcess: a 503 on a create that did create the batch),
// creates that land late (LandAfter: the connection drops, and the batch
// appears that much later on the Server's clock, with that created_at),
// and an SSE error event after a 200 on a stream.
//
// # Statistics
//
// Stats reports the calls per endpoint and every request ever submitted in
// a batch, with its params hash and last user text. SubmissionCounts counts
// the submissions per prompt (last user text) across batches and custom_ids,
// so tests can check that no prompt was paid for twice; BatchesCreated
// counts the batches created with an API key.
package emulator
