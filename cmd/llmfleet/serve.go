package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/llmfleet/llmfleet/claude"
	"github.com/llmfleet/llmfleet/gemini"
	"github.com/llmfleet/llmfleet/internal/otelsetup"
	"github.com/llmfleet/llmfleet/internal/serve"
	"github.com/llmfleet/llmfleet/internal/servestate"
	"github.com/llmfleet/llmfleet/openai"
	"github.com/llmfleet/llmfleet/proxy"
	"github.com/llmfleet/llmfleet/webhook"
)

func init() { commands["serve"] = runServe }

const serveUsage = `usage: llmfleet serve [flags]

Runs the batching proxy. Point clients at it as their Anthropic base URL,
at /openai/v1 on it as their OpenAI base URL, or at /gemini on it as
their Gemini base URL; requests carrying a latency budget (header
llmfleet-latency-budget-ms, or the path prefix /budget/<ms>) go flex or
are batched when the budget allows. A budget
routes; it does not cut a sync or flex call already sent (the upstream
bills it all the same): one still unanswered when its budget runs out is
answered late, a budget miss. A caller who wants the call cut then sends
llmfleet-deadline: hard (504 timeout_error at the budget). Every sync or
flex call the upstream has not answered within --upstream-timeout is cut
(504 timeout_error), and every call it may bill is in the cost ledger, a
cut one with its usage estimated if none was read.

Flags may also be set in a YAML file given with --config, one key per flag
name (flags given on the command line win):

  listen: 127.0.0.1:8787
  anthropic-url: https://api.anthropic.com
  openai-url: https://api.openai.com
  gemini-url: https://generativelanguage.googleapis.com
  sync-max-latency: 5s
  batch-window: 30s
  batch-min-size: 10
  batch-max-size: 100
  create-timeout: 2m
  default-budget: 0s
  upstream-timeout: 10m
  cache-ttl-upgrade: on
  db: /var/lib/llmfleet/llmfleet.db
  retention: 696h
  ledger-retention: 9600h
  openai-webhook-secret-env: OPENAI_WEBHOOK_SECRET
  # proxy-held keys (file only): clients present keys of their own,
  # the proxy sends its own credential upstream.
  upstream-api-key-env: ANTHROPIC_API_KEY
  openai-upstream-api-key-env: OPENAI_API_KEY   # opens the OpenAI face
  gemini-upstream-api-key-env: GEMINI_API_KEY   # opens the Gemini face
  client-keys:
    alice: <hex SHA-256 of alice's proxy key: printf %s "$KEY" | sha256sum>
  # spend limits and zero data retention (file only), per client: its
  # client-keys name, or its key label as /llmfleet/v1/stats shows it.
  clients:
    alice:
      daily-usd: 50        # the UTC day
      monthly-usd: 1000    # the UTC calendar month
      over-limit: reject   # 429 at a limit; batch-only: only batched calls
      zdr: true            # zero data retention: never batched
  # prices (file only): override or extend the embedded price table, in
  # USD per million tokens; cache and batch prices follow from input.
  pricing:
    anthropic:
      models:
        claude-sonnet-4-6: {input: 3, output: 15}

Batched requests, their batches and results are kept in a SQLite database
(--db FILE), or in PostgreSQL (--db postgres://user@host:port/db?sslmode=
disable, with &search_path=SCHEMA for a schema of its own, created with
its tables on first start), so that a crash or a restart loses nothing and
pays for nothing twice. One serve at a time uses a SQLite database;
several serve given one PostgreSQL URL and one secret are one fleet of
replicas behind a load balancer: they share pools, batches, answers and
figures, and take over what a dead one held once its lease ends
(--replica-name, --replica-lease).
API keys needed to poll after a restart are stored sealed under a secret:
$LLMFLEET_SECRET (hex or base64, at least 32 bytes) if set, else the file
--secret-file, created 0600 on first start (beside a SQLite database if
not given; with PostgreSQL one of the two must be given).

Besides the Anthropic API it serves, without asking for a key:
GET /llmfleet/ (a live dashboard), /llmfleet/v1/stats (what was paid and
saved, as JSON; ?since=24h reads the database), /llmfleet/v1/dashboard,
/metrics (Prometheus), /healthz (liveness: 200 once the port is open)
and /readyz (readiness: 200 once the database is open and the
dispatcher runs; 503 overloaded_error while starting and shutting down,
as every API call gets until ready). The port is bound before the
database is opened: a busy port leaves no state behind.
POST /llmfleet/v1/webhooks/openai takes OpenAI's batch webhooks, signed
with the secret in $OPENAI_WEBHOOK_SECRET (--openai-webhook-secret-env):
the batch an event names is polled at once. Polls stay the guarantee.

Logs go to stderr. The access log has one line per request at info level
(warn for a 5xx): method, path, status, latency and, for /v1/messages,
route, model, budget, request id and the label of the key (keyed with
the instance secret); --access-log=false turns it off. With --log-format
json, durations are numbers of seconds and the startup line (stdout) and
the shutdown stats are JSON. Logs never show a key, nor a message body
unless --log-bodies is given.

Traces go out over OTLP when OTEL_EXPORTER_OTLP_ENDPOINT (or
OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set: OTEL_EXPORTER_OTLP_PROTOCOL
http/protobuf (default) or grpc; OTEL_SDK_DISABLED=true or
OTEL_TRACES_EXPORTER=none turn them off; OTEL_SERVICE_NAME defaults to
llmfleet.

` + envUsage + `
flags:
`

// serveFlags are the flags of "llmfleet serve".
type serveFlags struct {
	cfg                                          serveConfig // the --config file's settings that have no flag
	listen, anthropicURL, openaiURL, geminiURL   *string
	pf                                           *policyFlags
	toolSync, verbose                            *bool
	ping, shutdown, upstreamTimeout              *time.Duration
	dbPath, secretFile, replicaName, adminKeyEnv *string
	openaiWebhookSecretEnv                       *string
	replicaLease, retention, ledgerRetention     *time.Duration
	readHeaderTimeout, bodyReadTimeout           *time.Duration
	bodiesInFlight                               *int64
	logs                                         *logFlags
}

// parseServeFlags parses the flags of serve, from args, the environment
// and the --config file, and sets the GC percent they ask for.
func parseServeFlags(args []string, stderr io.Writer) (*serveFlags, error) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		io.WriteString(stderr, serveUsage)
		fs.PrintDefaults()
	}
	configFile := fs.String("config", "", "YAML file with settings (flags on the command line win)")
	f := &serveFlags{
		listen:       fs.String("listen", "127.0.0.1:8787", "address to listen on"),
		anthropicURL: fs.String("anthropic-url", claude.DefaultBaseURL, "base URL of the Anthropic API"),
		openaiURL:    fs.String("openai-url", openai.DefaultBaseURL, "base URL of the OpenAI API (paths /v1/... appended); the OpenAI face is /openai/v1/ on the same listener"),
		geminiURL:    fs.String("gemini-url", gemini.DefaultBaseURL, "base URL of the Gemini API (paths /v1beta/... appended); the Gemini face is /gemini/v1beta/ (and /gemini/v1/) on the same listener"),
		pf:           addPolicyFlags(fs),
	}
	f.toolSync = fs.Bool("tool-results-sync", false, "send turns whose last user message carries tool_result blocks sync")
	f.ping = fs.Duration("ping-interval", proxy.DefaultPingInterval, "interval of ping events to a waiting streaming caller")
	f.shutdown = fs.Duration("shutdown-timeout", 30*time.Second, "how long shutdown waits for in-flight batches")
	f.upstreamTimeout = fs.Duration("upstream-timeout", proxy.DefaultUpstreamTimeout, "how long a sync or flex call waits for the upstream's answer to begin, whatever its budget: 504 timeout_error after (0: no limit)")
	f.dbPath = fs.String("db", "", "database of the durable state: a SQLite file (default: llmfleet/llmfleet.db in $XDG_DATA_HOME or ~/.local/share), or a PostgreSQL URL postgres://user@host:port/db?sslmode=disable[&search_path=SCHEMA] (then the secret must be given)")
	f.secretFile = fs.String("secret-file", "", "file of the secret sealing stored API keys, created 0600 if missing (default: llmfleet.secret beside the database; $"+SecretEnv+" wins)")
	f.replicaName = fs.String("replica-name", "", "with a PostgreSQL --db, this process's name in the fleet (default: the host name and the --listen port); a process restarted under its name adopts what it owned at once")
	f.replicaLease = fs.Duration("replica-lease", 15*time.Second, "with a PostgreSQL --db, how long this process's lease on its batches and queued requests lasts unless renewed (every third of it); when it ends another replica adopts them")
	f.retention = fs.Duration("retention", 29*24*time.Hour, "how long answered requests and their results are kept")
	f.ledgerRetention = fs.Duration("ledger-retention", 400*24*time.Hour, "how long the cost ledger (what llmfleet stats reads) is kept")
	f.adminKeyEnv = fs.String("admin-key-env", "", "environment variable holding the admin key, which shows request ids on /llmfleet/v1/stats and the dashboard (others see aggregates)")
	f.openaiWebhookSecretEnv = fs.String("openai-webhook-secret-env", "OPENAI_WEBHOOK_SECRET", "environment variable holding the signing secret (whsec_...) of OpenAI's batch webhooks, taken at POST "+webhook.OpenAIPath+"; unset, that endpoint answers 503")
	f.verbose = fs.Bool("v", false, "log every routed request")
	f.readHeaderTimeout = fs.Duration("read-header-timeout", 10*time.Second, "time a client has to send a request's headers")
	f.bodyReadTimeout = fs.Duration("body-read-timeout", proxy.DefaultBodyReadTimeout, "time a client has to send a request body (408 timeout_error after; negative: none)")
	f.bodiesInFlight = fs.Int64("max-body-bytes-in-flight", proxy.DefaultMaxBodyBytesInFlight, "bytes held in unfinished request bodies across all connections (529 overloaded_error over it; negative: none)")
	gcPercent := fs.Int("gc-percent", defaultGCPercent, "GOGC of the serve process: its live heap is small, so collections are frequent at the default of 100 (the GOGC environment variable wins)")
	f.logs = addLogFlags(fs)
	if err := parseFlags(fs, args, os.Getenv); err != nil {
		return nil, err
	}
	setGCPercent(*gcPercent, os.Getenv)
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if *configFile != "" {
		var err error
		if f.cfg, err = loadServeConfig(fs, *configFile); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// config checks the flags and returns serve's configuration, logging to
// logger.
func (f *serveFlags) config(logger *slog.Logger) (serve.Config, error) {
	prices, err := priceTable(f.cfg.Pricing)
	if err != nil {
		return serve.Config{}, err
	}
	upstream, err := url.Parse(strings.TrimSuffix(*f.anthropicURL, "/"))
	if err != nil || upstream.Scheme == "" || upstream.Host == "" {
		return serve.Config{}, fmt.Errorf("--anthropic-url %q is not an absolute URL", *f.anthropicURL)
	}
	openaiUpstream, err := url.Parse(strings.TrimSuffix(*f.openaiURL, "/"))
	if err != nil || openaiUpstream.Scheme == "" || openaiUpstream.Host == "" {
		return serve.Config{}, fmt.Errorf("--openai-url %q is not an absolute URL", *f.openaiURL)
	}
	geminiUpstream, err := url.Parse(strings.TrimSuffix(*f.geminiURL, "/"))
	if err != nil || geminiUpstream.Scheme == "" || geminiUpstream.Host == "" {
		return serve.Config{}, fmt.Errorf("--gemini-url %q is not an absolute URL", *f.geminiURL)
	}
	creds, err := f.cfg.credentials(os.Getenv)
	if err != nil {
		return serve.Config{}, err
	}
	clients, err := clientLimits(f.cfg.Clients)
	if err != nil {
		return serve.Config{}, err
	}
	adminKey := ""
	if *f.adminKeyEnv != "" {
		if adminKey = os.Getenv(*f.adminKeyEnv); adminKey == "" {
			return serve.Config{}, fmt.Errorf("--admin-key-env: $%s is not set or empty", *f.adminKeyEnv)
		}
	}
	hookSecret, err := webhookSecret(*f.openaiWebhookSecretEnv)
	if err != nil {
		return serve.Config{}, err
	}
	if *f.ledgerRetention <= 0 {
		return serve.Config{}, fmt.Errorf("--ledger-retention must be positive")
	}
	if *f.retention <= 0 {
		return serve.Config{}, fmt.Errorf("--retention must be positive")
	}
	return serve.Config{
		Listen: *f.listen, Upstream: upstream, OpenAIUpstream: openaiUpstream, GeminiUpstream: geminiUpstream,
		Policy: f.pf.policy(), UpstreamTimeout: *f.upstreamTimeout,
		State: servestate.Config{DB: *f.dbPath, SecretFile: *f.secretFile, Getenv: os.Getenv,
			Replica: *f.replicaName, Lease: *f.replicaLease},
		Retention: *f.retention, LedgerRetention: *f.ledgerRetention, ShutdownTimeout: *f.shutdown,
		ToolResultsSync: *f.toolSync, PingInterval: *f.ping, ReadHeaderTimeout: *f.readHeaderTimeout,
		BodyReadTimeout: *f.bodyReadTimeout, MaxBodyBytesInFlight: *f.bodiesInFlight,
		AdminKey: adminKey, Credentials: creds, Prices: prices, Clients: clients,
		OpenAIWebhookSecret: hookSecret, OpenAIWebhookSecretEnv: *f.openaiWebhookSecretEnv,
		Logger: logger, NoAccessLog: !*f.logs.accessLog, LogBodies: *f.logs.logBodies, JSON: f.logs.json(),
	}, nil
}

// webhookSecret reads the signing key of OpenAI's webhooks from the
// variable env names: nil if it is unset or empty (the endpoint answers
// that it is off), an error if it is not a secret.
func webhookSecret(env string) ([]byte, error) {
	v := os.Getenv(env)
	if env == "" || v == "" {
		return nil, nil
	}
	key, err := webhook.ParseSecret(v)
	if err != nil {
		return nil, fmt.Errorf("--openai-webhook-secret-env: $%s: %v", env, err)
	}
	return key, nil
}

// runServe runs the proxy until ctx ends (see serve.Run).
func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f, err := parseServeFlags(args, stderr)
	if err != nil {
		return err
	}
	// The log is written in batches (see serve.LogBuffer), and last:
	// after the shutdown's lines.
	logOut := serve.NewLogBuffer(stderr, 100*time.Millisecond)
	defer logOut.Close()
	logger, err := f.logs.logger(logOut, *f.verbose)
	if err != nil {
		return err
	}
	cfg, err := f.config(logger)
	if err != nil {
		return err
	}
	if !f.logs.json() {
		cfg.AccessText = logOut // the text handler's writer (logFlags.logger)
	}
	tracing, err := otelsetup.FromEnv(os.Getenv)
	if err != nil {
		return err
	}
	tp, shutdownTracing, err := otelsetup.Start(context.WithoutCancel(ctx), tracing)
	if err != nil {
		return err
	}
	cfg.TracerProvider = tp
	err = serve.Run(ctx, cfg, stdout)
	// The spans still pending go out once everything has stopped.
	flushCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if terr := shutdownTracing(flushCtx); terr != nil {
		logger.Warn("spans not exported at shutdown", "err", terr)
	}
	return err
}
