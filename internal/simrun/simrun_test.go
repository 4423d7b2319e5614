package simrun

import (
	"strings"
	"testing"

	"github.com/llmfleet/llmfleet/simulate"
)

func TestPolicyConfig(t *testing.T) {
	for _, name := range []string{"llmfleet", "prefer-batch", simulate.CacheBlindName, simulate.AllSyncName, "seed"} {
		cfg, err := PolicyConfig(simulate.Config{}, name)
		if err != nil || cfg.Name != name {
			t.Errorf("%s: %+v, %v", name, cfg.Name, err)
		}
	}
	if cfg, _ := PolicyConfig(simulate.Config{}, "prefer-batch"); !cfg.Policy.PreferBatch {
		t.Error("prefer-batch does not prefer batches")
	}
	if _, err := PolicyConfig(simulate.Config{}, "nope"); err == nil || !strings.Contains(err.Error(), "unknown policy") {
		t.Errorf("unknown policy: %v", err)
	}
}

func TestFormats(t *testing.T) {
	if got := dollars(-1.5); got != "-$1.50" {
		t.Errorf("dollars(-1.5) = %q", got)
	}
	if got := hitRate(map[string]simulate.CacheStats{"sync": {ReadTokens: 3, WriteTokens: 1}}, "sync", "flex"); got != "75%" {
		t.Errorf("hitRate = %q", got)
	}
	if got := hitRate(nil, "batch"); got != "-" {
		t.Errorf("hitRate of nothing = %q", got)
	}
	if got := ms(90_000); got != "1m30s" {
		t.Errorf("ms(90000) = %q", got)
	}
}
