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
// two batches. A create is ambiguous when its request was fully written but
// no answer was read: the connection dropped, an HTTP client timeout fired,
// or the answer's body broke off; and also when the answer is a 500, 502 or
// 504 without x-should-retry, since a gateway that timed out or an internal
// error after the body arrived does not prove the batch was not created
// (429 and 529 are refusals and are retried as above). CreateBatch then
// reconciles:
//
//  1. It waits ReconcileDelay, so that a create the provider is still
//     committing shows up, then waits until no other create of the same
//     number of requests is in flight on this Provider (their batch ids are
//     then known).
//  2. It lists the credential's batches, newest first, back to the time the
//     failed attempt started minus ReconcileSkew.
//  3. A candidate is a listed batch whose request_counts total the number of
//     requests sent and whose id this Provider has not already returned from
//     CreateBatch. If there is exactly one, and no other ambiguous create of
//     the same size started within twice ReconcileSkew, the candidate is the
//     batch the failed attempt made: CreateBatch returns it.
//  4. If there is none, the list, which is authoritative, proves the batch
//     was not created, and CreateBatch sends the create once more. If that
//     attempt is ambiguous too and reconciliation again finds nothing, the
//     error says the batch was not created.
//  5. Otherwise (several candidates, another unresolved ambiguous create of
//     the same size, a listing that fails or is too long, or a context that
//     ended before reconciliation could run) CreateBatch returns an error
//     wrapping ErrAmbiguousCreate: the batch may exist. It never guesses.
//
// Batches are scoped to a workspace and carry no client-chosen tag, so
// reconciliation cannot tell this process's batch from one of the same size
// that another process created with a key of the same workspace inside the
// window; keep other batch clients out of a workspace llmfleet uses, or keep
// ReconcileSkew small.
package claude
