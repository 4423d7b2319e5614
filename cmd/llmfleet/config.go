package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/internal/envflag"
	"github.com/llmfleet/llmfleet/pricing"
	"github.com/llmfleet/llmfleet/proxy"
	"gopkg.in/yaml.v3"
)

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
	// GeminiUpstreamAPIKeyEnv names the environment variable holding the
	// Gemini key the proxy sends upstream for its clients; without it the
	// Gemini face is closed in proxy-held-key mode.
	GeminiUpstreamAPIKeyEnv string `yaml:"gemini-upstream-api-key-env"`
	// ClientKeys maps a client name to the hex SHA-256 of its proxy key.
	ClientKeys map[string]string `yaml:"client-keys"`
	// Pricing overrides and extends the embedded price table, in the
	// shape of the pricing package's prices.yaml.
	Pricing yaml.Node `yaml:"pricing"`
	// Clients holds each client's spend limits and zero data retention
	// (clients.go).
	Clients yaml.Node `yaml:"clients"`
}

// priceTable returns the embedded price table overridden and extended by
// the pricing section of the config file, if any (same shape as the
// pricing package's prices.yaml).
func priceTable(section yaml.Node) (*pricing.Table, error) {
	t, err := pricing.Override(&section)
	if err != nil {
		return nil, fmt.Errorf("config: %v", err)
	}
	return t, nil
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
		case "upstream-api-key-env", "upstream-auth-token-env", "openai-upstream-api-key-env", "gemini-upstream-api-key-env", "client-keys", "pricing", "clients":
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
		if err := envflag.Unitless(fs, k, node.Value); err != nil {
			return cfg, fmt.Errorf("%s: %v", file, err)
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
		if c.UpstreamAPIKeyEnv != "" || c.UpstreamAuthTokenEnv != "" || c.OpenAIUpstreamAPIKeyEnv != "" || c.GeminiUpstreamAPIKeyEnv != "" {
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
	if c.GeminiUpstreamAPIKeyEnv != "" {
		if keys.Gemini.APIKey = getenv(c.GeminiUpstreamAPIKeyEnv); keys.Gemini.APIKey == "" {
			return nil, fmt.Errorf("config: environment variable %s (gemini-upstream-api-key-env) is empty", c.GeminiUpstreamAPIKeyEnv)
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
