package claude

import (
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/internal/httpretry"
)

// Defaults used for the zero values of Provider's fields.
const (
	// DefaultBaseURL is the Anthropic API's base URL.
	DefaultBaseURL = "https://api.anthropic.com"
	// DefaultVersion is the anthropic-version header sent when the request
	// does not carry one.
	DefaultVersion = "2023-06-01"
	// DefaultMaxRetries is the number of retries when MaxRetries is zero.
	DefaultMaxRetries = 2
	// DefaultReconcileSkew is the clock skew allowed between this host and
	// the provider when FindBatch looks for a batch.
	DefaultReconcileSkew = 2 * time.Minute
)

// The Anthropic Message Batches API's limits on one batch. MaxBytes takes
// "256 MB" in its decimal sense, the stricter reading.
const (
	MaxBatchRequests = 100_000
	MaxBatchBytes    = 256_000_000
)

// Provider is a client of the Anthropic Messages and Message Batches APIs.
// It implements llmfleet.Provider. Its zero value talks to the real API with
// default settings; set fields before first use and do not change them
// afterwards. A Provider is safe for concurrent use and must not be copied
// after first use.
type Provider struct {
	// BaseURL is the API's base URL, without a trailing "/v1"; it may
	// include a path prefix. Empty means DefaultBaseURL.
	BaseURL string

	// HTTPClient sends the requests. Nil means a client of the Provider's
	// own with pooled keep-alive connections and no overall timeout (the
	// caller's context bounds each call). A client Timeout that fires after
	// a batch create was written counts as an ambiguous failure.
	HTTPClient *http.Client

	// Version is the anthropic-version header sent when the request's
	// header has none. Empty means DefaultVersion.
	Version string

	// MaxRetries is the number of retries after the first attempt. Zero
	// means DefaultMaxRetries; a negative value disables retries.
	MaxRetries int

	// ReconcileSkew is the clock skew allowed between this host and the
	// provider when FindBatch looks for a batch created since a time.
	// Zero means DefaultReconcileSkew.
	ReconcileSkew time.Duration

	// Clock tells the time (to read a Retry-After given as a date) and
	// times the waits of retry backoff, through llmfleet.Sleep. Nil means
	// the real clock.
	Clock llmfleet.Clock

	// Logger receives retry and reconciliation events. Nil means no
	// logging.
	Logger *slog.Logger

	// CredentialLabel names a credential in log lines. Give it a labeler
	// keyed with the instance secret (the vault's Fingerprint); nil logs
	// credentials as llmfleet.Redacted. The secret itself is never logged.
	CredentialLabel func(llmfleet.Credential) string

	clientOnce sync.Once
	client     *http.Client
}

var _ llmfleet.Provider = (*Provider)(nil)

// Name returns "anthropic".
func (p *Provider) Name() string { return "anthropic" }

// Limits returns the Message Batches API's per-batch limits.
func (p *Provider) Limits() llmfleet.BatchLimits {
	return llmfleet.BatchLimits{MaxRequests: MaxBatchRequests, MaxBytes: MaxBatchBytes}
}

// credLabel names a credential in a log line (see CredentialLabel).
func (p *Provider) credLabel(c llmfleet.Credential) string {
	if p.CredentialLabel != nil {
		return p.CredentialLabel(c)
	}
	return llmfleet.Redacted
}

func (p *Provider) httpClient() *http.Client {
	if p.HTTPClient != nil {
		return p.HTTPClient
	}
	p.clientOnce.Do(func() {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = 64
		p.client = &http.Client{Transport: t}
	})
	return p.client
}

func (p *Provider) url(path string) string {
	base := p.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	return strings.TrimRight(base, "/") + path
}

func (p *Provider) version() string {
	if p.Version == "" {
		return DefaultVersion
	}
	return p.Version
}

func (p *Provider) maxRetries() int {
	return httpretry.MaxRetries(p.MaxRetries, DefaultMaxRetries)
}

func (p *Provider) skew() time.Duration {
	if p.ReconcileSkew <= 0 {
		return DefaultReconcileSkew
	}
	return p.ReconcileSkew
}

func (p *Provider) logger() *slog.Logger {
	if p.Logger != nil {
		return p.Logger
	}
	return slog.New(slog.DiscardHandler)
}
