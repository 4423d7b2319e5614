// Package serve runs "llmfleet serve": it binds the listener, opens the
// durable state (package servestate), starts the dispatcher, the ledger
// pipeline (package observe) and the proxy, writes the access log, and
// shuts them down in order. The command parses the flags into a Config;
// everything after is here.
package serve

import (
	"io"
	"log/slog"
	"net/url"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/llmfleet/llmfleet/dispatch"
	"github.com/llmfleet/llmfleet/internal/servestate"
	"github.com/llmfleet/llmfleet/ledger"
	"github.com/llmfleet/llmfleet/pricing"
	"github.com/llmfleet/llmfleet/proxy"
)

// Config is what "llmfleet serve" runs with, its flags parsed and
// checked. A zero duration or size leaves the proxy's or the
// dispatcher's default.
type Config struct {
	// Listen is the address to listen on.
	Listen string
	// Upstream and OpenAIUpstream are the base URLs of the Anthropic and
	// OpenAI APIs; both must be set.
	Upstream, OpenAIUpstream *url.URL
	// GeminiUpstream is the base URL of the Gemini API (nil: the public
	// endpoint, gemini.DefaultBaseURL).
	GeminiUpstream *url.URL
	// Policy is the dispatcher's (its DefaultBudget is the proxy's too).
	Policy dispatch.Policy
	// UpstreamTimeout is how long a sync or flex call waits for the
	// upstream's answer to begin: 0 or negative for no limit.
	UpstreamTimeout time.Duration
	// State says where the durable state is; its Replica, if empty, is
	// the host name and the listener's port.
	State servestate.Config
	// Retention and LedgerRetention are how long answered requests and
	// the cost ledger are kept (the dispatcher's defaults if 0).
	Retention, LedgerRetention time.Duration
	// ShutdownTimeout is how long shutdown waits for in-flight batches
	// and connected callers.
	ShutdownTimeout time.Duration

	ToolResultsSync      bool
	PingInterval         time.Duration
	ReadHeaderTimeout    time.Duration
	BodyReadTimeout      time.Duration
	MaxBodyBytesInFlight int64

	// AdminKey shows request ids on the stats and the dashboard.
	AdminKey string
	// OpenAIWebhookSecret is the signing key of OpenAI's webhooks
	// (webhook.ParseSecret), read from the variable OpenAIWebhookSecretEnv
	// names; nil answers POST /llmfleet/v1/webhooks/openai with an error
	// naming that variable.
	OpenAIWebhookSecret    []byte
	OpenAIWebhookSecretEnv string
	// Credentials, if not nil, are the proxy-held keys: clients present
	// keys of their own and the proxy sends its credential upstream.
	Credentials *proxy.ClientKeys
	// Prices is the price table (nil: pricing.Default()).
	Prices *pricing.Table
	// Clients are the spend limits and zero data retention of clients,
	// by the name their ledger entries give them (none: no limits).
	Clients map[string]ledger.ClientLimits

	// TracerProvider makes the spans of the proxy's routed calls and of
	// the dispatcher's requests and batches (nil: none); the command
	// makes it from the OTEL_ variables (package otelsetup) and shuts it
	// down once Run returns.
	TracerProvider trace.TracerProvider

	// Logger is the log (nil: none).
	Logger *slog.Logger
	// NoAccessLog turns the access log off (its counts stay).
	NoAccessLog bool
	// AccessText, if not nil, is the writer of Logger's handler when that
	// is a slog.TextHandler with no options but its level: the access
	// lines are written to it directly, byte for byte as the handler
	// would, without its work per line.
	AccessText io.Writer
	// LogBodies logs the message bodies at debug level.
	LogBodies bool
	// JSON prints the startup line as JSON.
	JSON bool
}
