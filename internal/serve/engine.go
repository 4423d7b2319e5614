package serve

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/cachecost"
	"github.com/llmfleet/llmfleet/claude"
	"github.com/llmfleet/llmfleet/dispatch"
	"github.com/llmfleet/llmfleet/gemini"
	"github.com/llmfleet/llmfleet/internal/servestate"
	"github.com/llmfleet/llmfleet/ledger"
	"github.com/llmfleet/llmfleet/observe"
	"github.com/llmfleet/llmfleet/openai"
	"github.com/llmfleet/llmfleet/pricing"
	"github.com/llmfleet/llmfleet/proxy"
	"github.com/llmfleet/llmfleet/webhook"
)

// engine is what serves behind the proxy: the dispatcher over the two
// providers, and the ledger pipeline that prices, counts and stores
// every call.
type engine struct {
	d      *dispatch.Dispatcher
	obs    *observe.Pipeline
	spend  *ledger.Spend // nil without client limits
	logger *slog.Logger
}

// openEngine makes the providers, the dispatcher and the ledger
// pipeline, and opens the dispatcher. On an error nothing is left open
// but the store.
func openEngine(cfg *Config, state *servestate.State) (*engine, error) {
	logger := cfg.Logger
	prices := cfg.Prices
	if prices == nil {
		prices = pricing.Default()
	}
	provider := &claude.Provider{BaseURL: cfg.Upstream.String(), Logger: logger, CredentialLabel: state.Vault.Fingerprint}
	if cfg.UpstreamTimeout <= 0 {
		cfg.UpstreamTimeout = -1 // none, for the proxy and the dispatcher alike
	}
	pol := cfg.Policy
	pol.UpstreamTimeout = cfg.UpstreamTimeout
	d := &dispatch.Dispatcher{
		Providers:       []llmfleet.Provider{provider, &openai.Provider{BaseURL: cfg.OpenAIUpstream.String()}, geminiProvider(cfg)},
		Policy:          pol,
		Logger:          logger,
		Store:           state.DB,
		Sealer:          state.Vault,
		Retention:       cfg.Retention,
		LedgerRetention: cfg.LedgerRetention,
		Flex:            prices.Flex,
		Prices:          costPrices(prices),
		Lease:           cfg.State.Lease,
		TracerProvider:  cfg.TracerProvider,
	}
	var spend *ledger.Spend
	if len(cfg.Clients) > 0 {
		// Read from the store every replica shares: a limit holds across them.
		spend = ledger.NewSpend(ledger.SpendConfig{Store: state.DB, Limits: cfg.Clients, Logger: logger})
	}
	obs, err := observe.New(observe.Config{
		Price:     prices.Cost,
		Canonical: prices.Canonical,
		Store:     state.DB,
		Logger:    logger,
		Provider:  provider.Name(),
		Stats:     d.Stats,
		InFlight:  d.InFlight,
		AdminKey:  cfg.AdminKey,
		Booked:    spendBooked(spend),
		Clients:   spendClients(spend),
	})
	if err != nil {
		return nil, err
	}
	e := &engine{d: d, obs: obs, spend: spend, logger: logger}
	// The provider's batch API calls (and their retries) count in the
	// upstream error metric.
	provider.HTTPClient = &http.Client{Transport: obs.CountErrors(upstreamTransport())}
	d.Price = obs.Price
	d.Observe = func(le llmfleet.LedgerEntry, stored bool) {
		if stored {
			obs.Counted(le) // written with its result already
		} else {
			obs.Observe(le)
		}
	}
	d.ObserveTurnaround = obs.ObserveTurnaround
	if err := d.Open(); err != nil {
		// Recovery may have sent batches out already: let them be recorded.
		closeCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		d.Close(closeCtx)
		cancel()
		e.closeObserver()
		return nil, err
	}
	return e, nil
}

// closeObserver writes the last ledger entries, waiting 10 seconds at
// most; the store must still be open.
func (e *engine) closeObserver() {
	closeCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.obs.Close(closeCtx); err != nil {
		e.logger.Warn("ledger entries still pending at shutdown", "err", err)
	}
}

// newProxy returns the proxy in front of e's dispatcher.
func newProxy(cfg *Config, state *servestate.State, e *engine, access *accessLog) *proxy.Server {
	srv := &proxy.Server{
		Submitter:       e.d,
		Upstream:        cfg.Upstream,
		OpenAIUpstream:  cfg.OpenAIUpstream,
		GeminiUpstream:  cfg.GeminiUpstream,
		DefaultBudget:   cfg.Policy.DefaultBudget,
		ToolResultsSync: cfg.ToolResultsSync,
		PingInterval:    cfg.PingInterval,
		Logger:          cfg.Logger,
		Observe:         e.obs.Observe,
		UpstreamError:   e.obs.UpstreamError,
		Access:          access.record,
		// Key labels (in the access log and the ledger's client column) are
		// keyed with the instance secret.
		Fingerprint:          state.Vault.Fingerprint,
		BodyReadTimeout:      cfg.BodyReadTimeout,
		MaxBodyBytesInFlight: cfg.MaxBodyBytesInFlight,
		UpstreamTimeout:      cfg.UpstreamTimeout,
		TracerProvider:       cfg.TracerProvider,
		TracePrice:           e.obs.Price,
		TierTimeout:          tierTimeouts(e.d.Providers),
	}
	if creds := cfg.Credentials; creds != nil {
		srv.Credentials = creds.Map
		if !creds.OpenAI.IsZero() {
			srv.OpenAICredentials = creds.MapOpenAI
		}
		if !creds.Gemini.IsZero() {
			srv.GeminiCredentials = creds.MapGemini
		}
		srv.ClientName = creds.Name
		srv.BatchOwners = state.DB
	}
	if e.spend != nil {
		srv.ClientRules = e.spend.Check
	}
	return srv
}

// spendBooked and spendClients return the hooks of the ledger pipeline
// on spend, nil without it.
func spendBooked(spend *ledger.Spend) func(llmfleet.LedgerEntry) {
	if spend == nil {
		return nil
	}
	return spend.Paid
}

func spendClients(spend *ledger.Spend) func(context.Context) []ledger.ClientStatus {
	if spend == nil {
		return nil
	}
	return spend.Clients
}

// openAIWebhooks returns the endpoint of OpenAI's batch webhooks, which
// has e's dispatcher look at the batch an event names at once.
func openAIWebhooks(cfg *Config, e *engine) *webhook.OpenAI {
	return &webhook.OpenAI{Secret: cfg.OpenAIWebhookSecret, SecretEnv: cfg.OpenAIWebhookSecretEnv, Logger: cfg.Logger,
		PollNow: func(id string) bool { return e.d.PollNow(openai.Name, id) }}
}

// upstreamTransport is the transport of the provider's client: the
// default one, keeping more idle connections to the provider.
func upstreamTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 64
	return t
}

// tierTimeouts returns the proxy's TierTimeout: the upstream timeout each
// provider states for a tier (llmfleet.TierTimeouts), 0 for none.
func tierTimeouts(providers []llmfleet.Provider) func(string, llmfleet.Tier) time.Duration {
	return func(name string, tier llmfleet.Tier) time.Duration {
		for _, p := range providers {
			if tt, ok := p.(llmfleet.TierTimeouts); ok && p.Name() == name {
				return tt.UpstreamTimeout(tier)
			}
		}
		return 0
	}
}

// geminiProvider returns the Gemini provider of cfg's upstream.
func geminiProvider(cfg *Config) *gemini.Provider {
	p := &gemini.Provider{}
	if cfg.GeminiUpstream != nil {
		p.BaseURL = cfg.GeminiUpstream.String()
	}
	return p
}

// costPrices returns the cost model's price source of a price table.
func costPrices(t *pricing.Table) func(provider, model string) (cachecost.Prices, bool) {
	return func(provider, model string) (cachecost.Prices, bool) {
		p, ok := t.Lookup(provider, model)
		return cachecost.PricesOf(p), ok
	}
}
