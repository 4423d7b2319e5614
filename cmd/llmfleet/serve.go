package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/cachecost"
	"github.com/llmfleet/llmfleet/claude"
	"github.com/llmfleet/llmfleet/dispatch"
	"github.com/llmfleet/llmfleet/observe"
	"github.com/llmfleet/llmfleet/openai"
	"github.com/llmfleet/llmfleet/pricing"
	"github.com/llmfleet/llmfleet/proxy"
)

func init() { commands["serve"] = runServe }

// serveConfig holds the settings of "llmfleet serve" that have no flag:
// the proxy-held-key mode, configured only in the --config file.
type serveConfig struct {
	// UpstreamAPIKeyEnv and UpstreamAuthTokenEnv name the environment
	// variables holding the credential the proxy sends upstream; the
	// secret itself never goes in the file.
	UpstreamAPIKeyEnv    string `yaml:"upstream-api-key-env"`
	UpstreamAuthTokenEnv string `yaml:"upstream-auth-token-env"`
	// OpenAIUpstreamAPIKeyEnv names the environment variable holding the
	// OpenAI key the proxy sends upstream for its clients; without it the
	// OpenAI face is closed in proxy-held-key mode.
	OpenAIUpstreamAPIKeyEnv string `yaml:"openai-upstream-api-key-env"`
	// ClientKeys maps a client name to the hex SHA-256 of its proxy key.
	ClientKeys map[string]string `yaml:"client-keys"`
	// Pricing overrides and extends the embedded price table, in the
	// shape of the pricing package's prices.yaml.
	Pricing yaml.Node `yaml:"pricing"`
}

const serveUsage = `usage: llmfleet serve [flags]

Runs the batching proxy. Point clients at it as their Anthropic base URL,
or at /openai/v1 on it as their OpenAI base URL; requests carrying a
latency budget (header llmfleet-latency-budget-ms, or the path prefix
/budget/<ms>) go flex or are batched when the budget allows. A budget
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
  # proxy-held keys (file only): clients present keys of their own,
  # the proxy sends its own credential upstream.
  upstream-api-key-env: ANTHROPIC_API_KEY
  openai-upstream-api-key-env: OPENAI_API_KEY   # opens the OpenAI face
  client-keys:
    alice: <hex SHA-256 of alice's proxy key: printf %s "$KEY" | sha256sum>
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

Logs go to stderr. The access log has one line per request at info level
(warn for a 5xx): method, path, status, latency and, for /v1/messages,
route, model, budget, request id and the label of the key (keyed with
the instance secret); --access-log=false turns it off. With --log-format
json, durations are numbers of seconds and the startup line (stdout) and
the shutdown stats are JSON. Logs never show a key, nor a message body
unless --log-bodies is given.

` + envUsage + `
flags:
`

// runServe runs the proxy until ctx ends, then shuts down in order: it
// stops accepting connections, closes the dispatcher (pooled requests go
// out, in-flight batches are awaited up to --shutdown-timeout), waits for
// the callers still connected (those parked on their connections alone
// too: proxy.Server.Drain) and closes the store. Whatever is still
// pending then is in the store, and the next start picks it up.
func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		io.WriteString(stderr, serveUsage)
		fs.PrintDefaults()
	}
	configFile := fs.String("config", "", "YAML file with settings (flags on the command line win)")
	listen := fs.String("listen", "127.0.0.1:8787", "address to listen on")
	anthropicURL := fs.String("anthropic-url", claude.DefaultBaseURL, "base URL of the Anthropic API")
	openaiURL := fs.String("openai-url", openai.DefaultBaseURL, "base URL of the OpenAI API (paths /v1/... appended); the OpenAI face is /openai/v1/ on the same listener")
	pf := addPolicyFlags(fs)
	toolSync := fs.Bool("tool-results-sync", false, "send turns whose last user message carries tool_result blocks sync")
	ping := fs.Duration("ping-interval", proxy.DefaultPingInterval, "interval of ping events to a waiting streaming caller")
	shutdown := fs.Duration("shutdown-timeout", 30*time.Second, "how long shutdown waits for in-flight batches")
	upstreamTimeout := fs.Duration("upstream-timeout", proxy.DefaultUpstreamTimeout, "how long a sync or flex call waits for the upstream's answer to begin, whatever its budget: 504 timeout_error after (0: no limit)")
	dbPath := fs.String("db", "", "database of the durable state: a SQLite file (default: llmfleet/llmfleet.db in $XDG_DATA_HOME or ~/.local/share), or a PostgreSQL URL postgres://user@host:port/db?sslmode=disable[&search_path=SCHEMA] (then the secret must be given)")
	secretFile := fs.String("secret-file", "", "file of the secret sealing stored API keys, created 0600 if missing (default: llmfleet.secret beside the database; $"+SecretEnv+" wins)")
	replicaName := fs.String("replica-name", "", "with a PostgreSQL --db, this process's name in the fleet (default: the host name and the --listen port); a process restarted under its name adopts what it owned at once")
	replicaLease := fs.Duration("replica-lease", 15*time.Second, "with a PostgreSQL --db, how long this process's lease on its batches and queued requests lasts unless renewed (every third of it); when it ends another replica adopts them")
	retention := fs.Duration("retention", 29*24*time.Hour, "how long answered requests and their results are kept")
	ledgerRetention := fs.Duration("ledger-retention", 400*24*time.Hour, "how long the cost ledger (what llmfleet stats reads) is kept")
	adminKeyEnv := fs.String("admin-key-env", "", "environment variable holding the admin key, which shows request ids on /llmfleet/v1/stats and the dashboard (others see aggregates)")
	verbose := fs.Bool("v", false, "log every routed request")
	readHeaderTimeout := fs.Duration("read-header-timeout", 10*time.Second, "time a client has to send a request's headers")
	bodyReadTimeout := fs.Duration("body-read-timeout", proxy.DefaultBodyReadTimeout, "time a client has to send a request body (408 timeout_error after; negative: none)")
	bodiesInFlight := fs.Int64("max-body-bytes-in-flight", proxy.DefaultMaxBodyBytesInFlight, "bytes held in unfinished request bodies across all connections (529 overloaded_error over it; negative: none)")
	gcPercent := fs.Int("gc-percent", defaultGCPercent, "GOGC of the serve process: its live heap is small, so collections are frequent at the default of 100 (the GOGC environment variable wins)")
	logs := addLogFlags(fs)
	if err := parseFlags(fs, args, os.Getenv); err != nil {
		return err
	}
	setGCPercent(*gcPercent, os.Getenv)
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	var cfg serveConfig
	if *configFile != "" {
		var err error
		if cfg, err = loadServeConfig(fs, *configFile); err != nil {
			return err
		}
	}

	// The log is written in batches (see logBuffer), and last: after the
	// shutdown's lines.
	logOut := newLogBuffer(stderr, 100*time.Millisecond)
	defer logOut.Close()
	logger, err := logs.logger(logOut, *verbose)
	if err != nil {
		return err
	}
	prices, err := priceTable(cfg.Pricing)
	if err != nil {
		return err
	}

	upstream, err := url.Parse(strings.TrimSuffix(*anthropicURL, "/"))
	if err != nil || upstream.Scheme == "" || upstream.Host == "" {
		return fmt.Errorf("--anthropic-url %q is not an absolute URL", *anthropicURL)
	}
	openaiUpstream, err := url.Parse(strings.TrimSuffix(*openaiURL, "/"))
	if err != nil || openaiUpstream.Scheme == "" || openaiUpstream.Host == "" {
		return fmt.Errorf("--openai-url %q is not an absolute URL", *openaiURL)
	}
	creds, err := cfg.credentials(os.Getenv)
	if err != nil {
		return err
	}
	adminKey := ""
	if *adminKeyEnv != "" {
		if adminKey = os.Getenv(*adminKeyEnv); adminKey == "" {
			return fmt.Errorf("--admin-key-env: $%s is not set or empty", *adminKeyEnv)
		}
	}
	if *ledgerRetention <= 0 {
		return fmt.Errorf("--ledger-retention must be positive")
	}
	if *retention <= 0 {
		return fmt.Errorf("--retention must be positive")
	}
	// Listen first: a busy port fails before any state is made. Until
	// the state is open, /healthz answers and /readyz and the API 503.
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %v", *listen, err)
	}
	ready := &readiness{}
	hs := &http.Server{Handler: ready, ReadHeaderTimeout: *readHeaderTimeout}
	stopped := make(chan struct{})
	hs.RegisterOnShutdown(func() { close(stopped) })
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	defer hs.Close() // on an early return; a no-op after Shutdown

	if *replicaLease < 3*time.Millisecond {
		return fmt.Errorf("--replica-lease must be at least 3ms")
	}
	replica := fleetReplica{name: *replicaName, lease: *replicaLease}
	if replica.name == "" {
		host, _ := os.Hostname()
		_, port, _ := net.SplitHostPort(ln.Addr().String())
		replica.name = host + ":" + port
	}
	state, err := openState(ctx, *dbPath, *secretFile, os.Getenv, logger, replica)
	if err != nil {
		return err
	}
	defer func() { // last: after the dispatcher and the callers are done
		if err := state.db.Close(); err != nil {
			logger.Warn("closing the store", "err", err)
		}
	}()
	logger.Info("durable state", "db", state.where, "secret", state.secret, "retention", *retention)
	provider := &claude.Provider{BaseURL: upstream.String(), Logger: logger, CredentialLabel: state.vault.Fingerprint}
	if *upstreamTimeout <= 0 {
		*upstreamTimeout = -1 // none, for the proxy and the dispatcher alike
	}
	pol := pf.policy()
	pol.UpstreamTimeout = *upstreamTimeout
	d := &dispatch.Dispatcher{
		Providers:       []llmfleet.Provider{provider, &openai.Provider{BaseURL: openaiUpstream.String()}},
		Policy:          pol,
		Logger:          logger,
		Store:           state.db,
		Sealer:          state.vault,
		Retention:       *retention,
		LedgerRetention: *ledgerRetention,
		Flex:            prices.Flex,
		Prices:          costPrices(prices),
		Lease:           replica.lease,
	}
	obs, err := observe.New(observe.Config{
		Price:      prices.Cost,
		Store:      state.db,
		Logger:     logger,
		Provider:   provider.Name(),
		Stats:      d.Stats,
		InFlight:   d.InFlight,
		AdminKey:   adminKey,
		FleetSince: state.fleetSince,
	})
	if err != nil {
		return err
	}
	defer func() { // before the store closes: the last ledger entries go in
		closeCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := obs.Close(closeCtx); err != nil {
			logger.Warn("ledger entries still pending at shutdown", "err", err)
		}
		cancel()
	}()
	// The provider's batch API calls (and their retries) count in the
	// upstream error metric.
	provider.HTTPClient = &http.Client{Transport: obs.CountErrors(upstreamTransport())}
	d.Price = obs.Price
	d.Observe = func(e llmfleet.LedgerEntry, stored bool) {
		if stored {
			obs.Counted(e) // written with its result already
		} else {
			obs.Observe(e)
		}
	}
	d.ObserveTurnaround = obs.ObserveTurnaround
	if err := d.Open(); err != nil {
		// Recovery may have sent batches out already: let them be recorded.
		closeCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		d.Close(closeCtx)
		cancel()
		return err
	}
	access := newAccessLog(logger, !*logs.accessLog)
	srv := &proxy.Server{
		Submitter:       d,
		Upstream:        upstream,
		OpenAIUpstream:  openaiUpstream,
		DefaultBudget:   *pf.defBudget,
		ToolResultsSync: *toolSync,
		PingInterval:    *ping,
		Logger:          logger,
		Observe:         obs.Observe,
		UpstreamError:   obs.UpstreamError,
		Access:          access.record,
		// Key labels (in the access log and the ledger's client column) are
		// keyed with the instance secret.
		Fingerprint:          state.vault.Fingerprint,
		BodyReadTimeout:      *bodyReadTimeout,
		MaxBodyBytesInFlight: *bodiesInFlight,
		UpstreamTimeout:      *upstreamTimeout,
	}
	if creds != nil {
		srv.Credentials = creds.Map
		if !creds.OpenAI.IsZero() {
			srv.OpenAICredentials = creds.MapOpenAI
		}
		srv.ClientName = creds.Name
		srv.BatchOwners = state.db
	}
	var api http.Handler = srv.Handler()
	if *logs.logBodies {
		api = observe.LogBodies(api, logger)
	}

	ready.serve(obs.Handler(api))
	openaiFace := openaiUpstream.String()
	if creds != nil && creds.OpenAI.IsZero() {
		openaiFace = "closed"
	}
	startupLine(stdout, logs.json(), "http://"+ln.Addr().String(), upstream.String(), openaiFace)

	var serveErr error
	select {
	case serveErr = <-errc:
	case <-ctx.Done():
	}
	ready.stop()
	logger.Info("shutting down")
	shutCtx, cancel := context.WithTimeout(context.Background(), *shutdown)
	defer cancel()
	shutErr := make(chan error, 1)
	go func() { shutErr <- hs.Shutdown(shutCtx) }()
	if serveErr == nil {
		<-stopped // listeners closed: no new request arrives
	}
	if err := d.Close(shutCtx); err != nil {
		logger.Warn("dispatcher closed before its batches ended", "err", err)
	}
	if err := srv.Drain(shutCtx); err != nil { // callers parked on their connections alone
		logger.Warn("parked callers still waiting at shutdown", "err", err)
	}
	if err := <-shutErr; err != nil {
		logger.Warn("callers still connected at shutdown", "err", err)
		hs.Close()
	}
	if serveErr == nil {
		serveErr = <-errc
	}
	if err := access.close(shutCtx); err != nil {
		logger.Warn("access log lines not written at shutdown", "err", err)
	}
	logger.LogAttrs(context.Background(), slog.LevelInfo, "stopped", statsAttr(d.Stats(), access.syncCalls.Load()))
	if errors.Is(serveErr, http.ErrServerClosed) {
		return nil
	}
	return serveErr
}

// priceTable returns the embedded price table overridden and extended by
// the pricing section of the config file, if any (same shape as the
// pricing package's prices.yaml).
func priceTable(section yaml.Node) (*pricing.Table, error) {
	t := pricing.Default()
	if section.Kind == 0 {
		return t, nil
	}
	doc, err := yaml.Marshal(&section)
	if err != nil {
		return nil, fmt.Errorf("config: pricing: %v", err)
	}
	if err := t.Merge(bytes.NewReader(doc)); err != nil {
		return nil, fmt.Errorf("config: %v", err)
	}
	return t, nil
}

// upstreamTransport is the transport of the provider's client: the
// default one, keeping more idle connections to the provider.
func upstreamTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 64
	return t
}

// loadServeConfig reads a --config file: keys named like flags set the flags
// not given on the command line; the other keys are returned.
func loadServeConfig(fs *flag.FlagSet, file string) (serveConfig, error) {
	var cfg serveConfig
	data, err := os.ReadFile(file)
	if err != nil {
		return cfg, err
	}
	var doc map[string]yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return cfg, fmt.Errorf("%s: %v", file, err)
	}
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		return cfg, fmt.Errorf("%s: %v", file, err)
	}
	explicit := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { explicit[f.Name] = true })
	keys := make([]string, 0, len(doc))
	for k := range doc {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		switch k {
		case "upstream-api-key-env", "upstream-auth-token-env", "openai-upstream-api-key-env", "client-keys", "pricing":
			continue
		case "config":
			return cfg, fmt.Errorf("%s: a config file cannot name another", file)
		}
		if fs.Lookup(k) == nil {
			return cfg, fmt.Errorf("%s: unknown setting %q", file, k)
		}
		node := doc[k]
		if node.Kind != yaml.ScalarNode {
			return cfg, fmt.Errorf("%s: %s must be a single value", file, k)
		}
		if explicit[k] {
			continue
		}
		if err := fs.Set(k, node.Value); err != nil {
			return cfg, fmt.Errorf("%s: %s: %v", file, k, err)
		}
	}
	return cfg, nil
}

// credentials returns the proxy-held-key hook the config asks for, or nil.
func (c serveConfig) credentials(getenv func(string) string) (*proxy.ClientKeys, error) {
	if len(c.ClientKeys) == 0 {
		if c.UpstreamAPIKeyEnv != "" || c.UpstreamAuthTokenEnv != "" || c.OpenAIUpstreamAPIKeyEnv != "" {
			return nil, errors.New("config: an upstream key is set but no client-keys admit clients")
		}
		return nil, nil
	}
	var up llmfleet.Credential
	if c.UpstreamAPIKeyEnv != "" {
		if up.APIKey = getenv(c.UpstreamAPIKeyEnv); up.APIKey == "" {
			return nil, fmt.Errorf("config: environment variable %s (upstream-api-key-env) is empty", c.UpstreamAPIKeyEnv)
		}
	}
	if c.UpstreamAuthTokenEnv != "" {
		if up.AuthToken = getenv(c.UpstreamAuthTokenEnv); up.AuthToken == "" {
			return nil, fmt.Errorf("config: environment variable %s (upstream-auth-token-env) is empty", c.UpstreamAuthTokenEnv)
		}
	}
	if up.IsZero() {
		return nil, errors.New("config: client-keys need upstream-api-key-env or upstream-auth-token-env")
	}
	keys := &proxy.ClientKeys{Upstream: up, Hashes: make(map[string]string, len(c.ClientKeys))}
	if c.OpenAIUpstreamAPIKeyEnv != "" {
		if keys.OpenAI.AuthToken = getenv(c.OpenAIUpstreamAPIKeyEnv); keys.OpenAI.AuthToken == "" {
			return nil, fmt.Errorf("config: environment variable %s (openai-upstream-api-key-env) is empty", c.OpenAIUpstreamAPIKeyEnv)
		}
	}
	for name, h := range c.ClientKeys {
		h = strings.ToLower(strings.TrimSpace(h))
		if len(h) != 64 || strings.Trim(h, "0123456789abcdef") != "" {
			return nil, fmt.Errorf("config: client-keys: %s is not a hex SHA-256 of a key", name)
		}
		keys.Hashes[h] = name
	}
	return keys, nil
}

// costPrices returns the cost model's price source of a price table.
func costPrices(t *pricing.Table) func(provider, model string) (cachecost.Prices, bool) {
	return func(provider, model string) (cachecost.Prices, bool) {
		p, ok := t.Lookup(provider, model)
		return cachecost.PricesOf(p), ok
	}
}
