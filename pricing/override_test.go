package pricing

import (
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// Override merges a config file's pricing section, in each form a config
// reader may hold it, into the default table.
func TestOverride(t *testing.T) {
	const section = `
anthropic:
  models:
    claude-sonnet-4-6: {input: 4}
    claude-mythos-5: {input: 25, output: 125, cache-multipliers: {read: 0.05}}
`
	var cfg struct {
		Pricing yaml.Node `yaml:"pricing"`
	}
	if err := yaml.Unmarshal([]byte("pricing:"+strings.ReplaceAll(section, "\n", "\n  ")), &cfg); err != nil {
		t.Fatal(err)
	}
	var asMap map[string]any
	if err := yaml.Unmarshal([]byte(section), &asMap); err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]any{"node": cfg.Pricing, "*node": &cfg.Pricing, "map": asMap,
		"bytes": []byte(section), "string": section} {
		tab, err := Override(v)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if p, _ := tab.Lookup("anthropic", "claude-sonnet-4-6"); p.Input != 4 || p.Output != 15 {
			t.Errorf("%s: sonnet %v", name, p)
		}
		if p, ok := tab.Lookup("anthropic", "claude-mythos-5"); !ok || p.CacheRead != 1.25 {
			t.Errorf("%s: mythos %v %v", name, p, ok)
		}
		if _, ok := tab.Lookup("anthropic", "claude-opus-5-5"); !ok {
			t.Errorf("%s: the default prices lost", name)
		}
	}
	for name, v := range map[string]any{"nil": nil, "zero node": yaml.Node{}, "nil node": (*yaml.Node)(nil), "empty": ""} {
		tab, err := Override(v)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if p, _ := tab.Lookup("anthropic", "claude-sonnet-4-6"); p.Input != 3 {
			t.Errorf("%s: %v", name, p)
		}
	}
	if _, err := Override("anthropic: {models: {m: {input: 1}}}"); err == nil {
		t.Error("a model without an output price merged")
	}
	if _, err := Override(map[string]any{"anthropic": map[string]any{"modles": nil}}); err == nil {
		t.Error("an unknown key merged")
	}
}
