// Package claude is the Anthropic adapter of llmfleet: Provider is an HTTP
// client of the Anthropic Messages API (POST /v1/messages, plain and
// streaming) and Message Batches API (/v1/messages/batches) that implements
// llmfleet.Provider. The package is named claude so that it can be imported
// next to the SDK's anthropic package without an alias.
//
// # Requests
//
// Bodies are sent byte for byte; batch params are embedded in the create
// body unchanged. Each request carries the credential (x-api-key, or
// Authorization: Bearer for an auth token), anthropic-version (the caller's,
// else Provider.Version) and every anthropic-* header the caller passed,
// with all its values. No other caller header is sent, so llmfleet-*
// headers never leave the process. Credentials are logged by fingerprint
// only. Error answers become *llmfleet.Error values built from the provider's
// error envelope.
//
// # Retries
//
// Like the official SDKs, a call is retried up to MaxRetries times when the
// provider answers with a header x-should-retry: true, or, without that
// header, with status 408, 409, 429 or any status of 500 or more (529
// included); x-should-retry: false forbids the retry. The wait is
// retry-after-ms, else retry-after (seconds or an HTTP date), else
// min(0.5 s × 2^n, 8 s) less up to a quarter of random jitter; the caller's
// context ends the wait.
//
// Connection failures are retried according to what they prove. Retrieve,
// list, results and cancel are idempotent and are retried after any
// connection failure; a results stream that breaks part-way is fetched again
// and the custom_ids already delivered are skipped. Send, Stream and
// CreateBatch are retried after a connection failure only if the request was
// never written to the connection (as reported by net/http/httptrace's
// WroteRequest), since otherwise the provider may already be running it.
//
// # Ambiguous batch creates
//
// A batch create is not idempotent: sending it twice would create and bill
// two batches. CreateBatch never reconciles a failed create itself (the
// dispatcher's one reconciler does, with FindBatch); it classifies the
// failure:
//
//   - refused: an error answer of 4xx or 529 (overloaded_error is sent
//     before any work). Returned as an *llmfleet.Error; 429 and 529 are
//     retried as above.
//   - not delivered: the connection failed before the request was written
//     (a refused connect, a DNS failure). Retried as above, then returned
//     wrapping llmfleet.ErrNotDelivered.
//   - uncertain: the request was written and no answer was read (a dropped
//     connection, a timeout; Answered false: it may still land until the
//     call's deadline), or the answer is a 5xx other than 529, whatever
//     x-should-retry says (Answered true), or a 2xx whose body is
//     unreadable. Returned as an *llmfleet.UncertainError.
//
// Batches carry no metadata, so llmfleet's tag of a batch is the prefix of
// its custom_ids; FindBatch reads it from the first result of an ended
// candidate, and answers llmfleet.ErrUndetermined while a candidate of the
// same size is still in progress.
package claude
