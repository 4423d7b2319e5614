package llmfleet

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"
)

// Route is the path a request takes to the provider.
type Route string

// The routes a request can take.
const (
	// RouteSync sends the request to the provider's synchronous endpoint.
	RouteSync Route = "sync"
	// RouteBatch pools the request into a provider batch job.
	RouteBatch Route = "batch"
	// RouteFlex sends the request to the provider's synchronous endpoint
	// in its flex tier (OpenAI: service_tier "flex"): batch prices at
	// close to sync latency, for some models, refused now and then for
	// lack of capacity (ErrFlexUnavailable), in which case it is retried
	// while its budget allows and then sent to the standard tier.
	RouteFlex Route = "flex"
)

// Tier is the service tier a provider reports it served a call in, which
// is what the call is priced at (it may differ from the tier asked for).
type Tier string

// The service tiers, in the vocabulary's terms; each provider adapter maps
// its own names onto them (OpenAI's "default" and "auto" are
// TierStandard).
const (
	// TierStandard is the synchronous endpoint's list price.
	TierStandard Tier = "standard"
	// TierFlex is the flex tier (batch prices, synchronous call).
	TierFlex Tier = "flex"
	// TierBatch is the batch API's price.
	TierBatch Tier = "batch"
	// TierPriority is a premium tier (OpenAI "priority", "fast"; Anthropic
	// Priority Tier).
	TierPriority Tier = "priority"
)

// TierOf returns the tier a route is priced at when the provider reports
// none: TierStandard for RouteSync, TierFlex for RouteFlex, TierBatch for
// RouteBatch.
func TierOf(r Route) Tier {
	switch r {
	case RouteFlex:
		return TierFlex
	case RouteBatch:
		return TierBatch
	default:
		return TierStandard
	}
}

// Credential is the secret a request is sent upstream with. Exactly one of
// APIKey and AuthToken is normally set. A Credential is never logged: its
// String, GoString and LogValue methods print Redacted, nothing derived
// from the secret (a label under a public key would let whoever reads a
// log confirm a guessed key). Where a log needs a stable label, the code
// that writes it is given a labeler keyed with the instance secret, such
// as the vault's Fingerprint.
type Credential struct {
	// APIKey is sent as x-api-key.
	APIKey string
	// AuthToken is sent as "Authorization: Bearer <token>".
	AuthToken string
}

// IsZero reports whether the credential carries no secret.
func (c Credential) IsZero() bool { return c.APIKey == "" && c.AuthToken == "" }

// Fingerprint returns a stable identifier of the credential, computed as a
// keyed hash so that it reveals nothing about the secret. Pools and access
// checks compare fingerprints, never secrets. key may be nil, in which case
// a fixed domain-separation key is used.
func (c Credential) Fingerprint(key []byte) string {
	if key == nil {
		key = []byte("llmfleet credential fingerprint v1")
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte("k:"))
	m.Write([]byte(c.APIKey))
	m.Write([]byte{0})
	m.Write([]byte("t:"))
	m.Write([]byte(c.AuthToken))
	return "cred_" + hex.EncodeToString(m.Sum(nil)[:12])
}

// Redacted is what a Credential prints as: nothing of the secret.
const Redacted = "[redacted]"

// String prints Redacted, never the secret nor anything derived from it.
func (c Credential) String() string { return Redacted }

// GoString prints Redacted, never the secret nor anything derived from it.
func (c Credential) GoString() string { return "llmfleet.Credential{" + Redacted + "}" }

// Format prints Redacted whatever the verb (GoString's form for %#v), so
// that no verb prints the fields.
func (c Credential) Format(f fmt.State, verb rune) {
	if verb == 'v' && f.Flag('#') {
		io.WriteString(f, c.GoString())
		return
	}
	io.WriteString(f, Redacted)
}

// Request is one model call: the provider it goes to, the credential it must
// be sent with and its raw JSON body, which is passed on byte for byte (it is
// never decoded and re-encoded, so fields unknown to llmfleet survive).
type Request struct {
	// Provider names the provider, e.g. "anthropic".
	Provider string
	// Credential is the secret the request is sent with.
	Credential Credential
	// Header holds provider headers to pass on, such as anthropic-beta and
	// anthropic-version. Requests whose pass-through headers differ are never
	// pooled into one batch. It may be nil.
	Header http.Header
	// Endpoint is the path of the provider's API the body is for, e.g.
	// "/v1/chat/completions" or "/v1/embeddings"; empty means the
	// provider's create-message endpoint (Anthropic: /v1/messages,
	// OpenAI: /v1/chat/completions). Requests of different endpoints
	// never share a batch.
	Endpoint string
	// Body is the raw JSON body of the provider's create-message call.
	Body json.RawMessage
	// ID, if set, is the llmfleet id ("lfr_...", see NewID) the request is
	// kept under if it is batched; empty lets the Submitter assign one. A
	// caller sets it to know the id before the answer, e.g. to send it in
	// the headers of a stream that begins before its batch ends. With a
	// Store, an id already accepted is not accepted again: the call
	// attaches to that request (or gets its stored answer) if its
	// credential and body are the same, and fails with ErrIDConflict
	// otherwise, which makes retries with a chosen id idempotent. The
	// sync route ignores it.
	ID string
	// Retry tells that ID may name a request accepted before (it is
	// derived from an Idempotency-Key, not new): the engine then sends
	// nothing for it before its store shows the id free, even when the
	// store is too slow for its budget (a new ID needs no such look).
	Retry bool
	// Client names who sent the request, for spend attribution in the
	// ledger (LedgerEntry.Client): a keyed fingerprint of the credential
	// the client presented, or a configured client name; never a secret.
	// It may be empty.
	Client string
	// Flex asks the provider's flex tier for a synchronous call (Send or
	// Stream): the OpenAI adapter sets service_tier "flex" in the body. A
	// provider without a flex tier ignores it; the engine sets it only on
	// RouteFlex, for models that have one.
	Flex bool
	// NoBatch keeps the request off the batch route whatever its budget
	// (a zero-data-retention client: batches are not ZDR-eligible);
	// routing then chooses between sync and flex.
	NoBatch bool
	// BatchOnly routes the request to batch whenever its budget allows
	// one, whatever the cost model says (a client over its spend limit
	// whose calls are taken only batched); otherwise to sync.
	BatchOnly bool
}

// Response is the answer to a Request, whichever route it took.
type Response struct {
	// Route is the route the request took.
	Route Route
	// StatusCode is the HTTP status the synchronous API answered (or would
	// have answered) with: 200 for a Response.
	StatusCode int
	// Header holds the provider's response headers on the sync route; nil
	// for batched responses.
	Header http.Header
	// Body is the provider's Message object, as raw JSON.
	Body json.RawMessage
	// RequestID is llmfleet's id of a batched request ("lfr_..."), by which
	// its result can be fetched later when the dispatcher has a Store.
	RequestID string
	// BatchID is the provider's batch id for batched responses.
	BatchID string
	// CustomID is the custom_id the request had inside its batch.
	CustomID string
	// Usage is the token usage the provider reported.
	Usage Usage
	// Model is the model that answered.
	Model string
	// Queued is how long the request waited in the pool before its batch was
	// created; BatchTurnaround is how long the batch took upstream.
	Queued, BatchTurnaround time.Duration
	// Tier is the service tier the provider reports it served the request
	// in (OpenAI: the response's service_tier); empty when it reports
	// none, in which case the route's tier applies (TierOf). Costs follow
	// the tier served, never the tier asked for.
	Tier Tier
	// Pending says the provider answered the call before carrying it out
	// (an OpenAI background response, queued): what it will bill is not
	// known, and the call's ledger entry estimates it from the request's
	// body (LedgerEntry.Estimated).
	Pending bool
}

// Usage is the token usage of one request, as the provider reports it.
type Usage struct {
	// InputTokens counts the input tokens after the last cache breakpoint.
	InputTokens int64 `json:"input_tokens"`
	// OutputTokens counts the output tokens.
	OutputTokens int64 `json:"output_tokens"`
	// CacheCreationInputTokens counts the tokens written to the cache, of
	// both TTLs; CacheCreation splits them by TTL when the provider does.
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	// CacheReadInputTokens counts the tokens read from the cache.
	CacheReadInputTokens int64 `json:"cache_read_input_tokens"`
	// CacheCreation splits the cache writes by TTL.
	CacheCreation struct {
		Ephemeral5mInputTokens int64 `json:"ephemeral_5m_input_tokens"`
		Ephemeral1hInputTokens int64 `json:"ephemeral_1h_input_tokens"`
	} `json:"cache_creation"`
}

// LogValue logs Redacted, never the secret nor anything derived from it.
func (c Credential) LogValue() slog.Value { return slog.StringValue(Redacted) }
