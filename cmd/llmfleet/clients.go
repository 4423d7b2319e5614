package main

import (
	"fmt"

	"github.com/llmfleet/llmfleet/ledger"
	"gopkg.in/yaml.v3"
)

// clientConfig is one client's entry of the clients section of serve's
// config file: its spend limits and zero data retention.
type clientConfig struct {
	DailyUSD   float64 `yaml:"daily-usd"`
	MonthlyUSD float64 `yaml:"monthly-usd"`
	OverLimit  string  `yaml:"over-limit"`
	ZDR        bool    `yaml:"zdr"`
}

// clientKeys are the settings a client's entry may have.
var clientKeys = map[string]bool{"daily-usd": true, "monthly-usd": true, "over-limit": true, "zdr": true}

// clientLimits reads the clients section of the config file (a client
// named as client-keys names it, or by its key label as the stats show
// it) into the limits of each client, checked.
func clientLimits(section yaml.Node) (map[string]ledger.ClientLimits, error) {
	if section.Kind == 0 {
		return nil, nil
	}
	if section.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("config: clients must map each client's name to its limits (daily-usd, monthly-usd, over-limit, zdr)")
	}
	out := make(map[string]ledger.ClientLimits, len(section.Content)/2)
	for i := 0; i+1 < len(section.Content); i += 2 {
		name, node := section.Content[i].Value, section.Content[i+1]
		if name == "" {
			return nil, fmt.Errorf("config: clients: line %d: a client needs a name", section.Content[i].Line)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("config: clients: %s is given twice", name)
		}
		if node.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("config: clients: %s must map settings (daily-usd, monthly-usd, over-limit, zdr) to values", name)
		}
		for j := 0; j+1 < len(node.Content); j += 2 {
			if k := node.Content[j].Value; !clientKeys[k] {
				return nil, fmt.Errorf("config: clients: %s: unknown setting %q; use daily-usd, monthly-usd, over-limit or zdr", name, k)
			}
		}
		var c clientConfig
		if err := node.Decode(&c); err != nil {
			return nil, fmt.Errorf("config: clients: %s: %v", name, err)
		}
		l := ledger.ClientLimits{DailyUSD: c.DailyUSD, MonthlyUSD: c.MonthlyUSD, OverLimit: ledger.OverLimit(c.OverLimit), ZDR: c.ZDR}
		if err := l.Check(name); err != nil {
			return nil, fmt.Errorf("config: %v", err)
		}
		out[name] = l
	}
	return out, nil
}
