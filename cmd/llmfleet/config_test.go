package main

import (
	"bytes"
	"flag"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

func TestLoggerFormat(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	f := addLogFlags(fs)
	if err := fs.Parse([]string{"--log-format", "json"}); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	l, err := f.logger(&buf, false)
	if err != nil {
		t.Fatal(err)
	}
	l.Debug("hidden")
	l.Info("shown", "n", 1)
	if got := buf.String(); !strings.HasPrefix(got, `{"time":`) || strings.Contains(got, "hidden") {
		t.Fatalf("log %q", got)
	}
	fs.Parse([]string{"--log-format", "xml"})
	if _, err := f.logger(&buf, false); err == nil {
		t.Fatal("xml accepted")
	}
}

func TestPriceTableConfig(t *testing.T) {
	var cfg serveConfig
	if err := yaml.Unmarshal([]byte("pricing:\n  anthropic:\n    models:\n      claude-sonnet-4-6: {input: 4}\n      m-1: {input: 1, output: 2}\n"), &cfg); err != nil {
		t.Fatal(err)
	}
	table, err := priceTable(cfg.Pricing)
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := table.Lookup("anthropic", "claude-sonnet-4-6"); !ok || p.Input != 4 || p.Output != 15 {
		t.Fatalf("override: %+v %v", p, ok)
	}
	if p, ok := table.Lookup("anthropic", "m-1"); !ok || p.CacheWrite1h != 2 || p.Batch != 0.5 {
		t.Fatalf("added model: %+v %v", p, ok)
	}
	if err := yaml.Unmarshal([]byte("pricing:\n  anthropic:\n    models:\n      m-2: {input: 1}\n"), &cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := priceTable(cfg.Pricing); err == nil {
		t.Fatal("a model without an output price accepted")
	}
	if table, err := priceTable(yaml.Node{}); err != nil || len(table.Models("anthropic")) == 0 {
		t.Fatalf("no pricing section: %v", err)
	}
}
