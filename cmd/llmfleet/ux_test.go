package main

import (
	"bytes"
	"context"
	"io"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmfleet/llmfleet/emulator"
)

// llmfleet stats names the database or the URL it read, a password in a
// URL masked.
func TestStatsNamesItsSource(t *testing.T) {
	emuTS := httptest.NewServer(&emulator.Server{})
	defer emuTS.Close()
	db := filepath.Join(t.TempDir(), "llmfleet.db")
	base, stop := startServeOn(t, "--anthropic-url", emuTS.URL, "--db", db)
	withPassword := strings.Replace(base, "http://", "http://ops:hunter2@", 1)
	var out, errOut bytes.Buffer
	if err := runStats(context.Background(), []string{"--url", withPassword}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if want := "Ledger:           " + strings.Replace(base, "http://", "http://ops:xxxxx@", 1) + "\n"; !strings.HasPrefix(out.String(), want) ||
		strings.Contains(out.String(), "hunter2") {
		t.Errorf("stats --url: %q, want it to begin %q", out.String(), want)
	}
	stop()
	out.Reset()
	if err := runStats(context.Background(), []string{"--db", db, "--json"}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if errOut.String() != "llmfleet stats: the ledger of "+db+"\n" || !strings.HasPrefix(out.String(), "{") {
		t.Errorf("stats --db --json: stderr %q, stdout %q", errOut.String(), out.String())
	}
	if got := statsSource("", "postgres://llmfleet:s3cret@db.internal:5432/llmfleet"); strings.Contains(got, "s3cret") ||
		!strings.Contains(got, "db.internal:5432/llmfleet") {
		t.Errorf("a postgres URL: %q", got)
	}
	t.Setenv("XDG_DATA_HOME", "/data")
	if got := statsSource("", ""); got != "/data/llmfleet/llmfleet.db" {
		t.Errorf("the default database: %q", got)
	}
}

// A duration flag given a number without a unit says durations need one,
// on the command line and in the config file.
func TestServeDurationNeedsAUnit(t *testing.T) {
	err := runServe(context.Background(), []string{"--default-budget", "10"}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), `--default-budget: a duration needs a unit, e.g. "10s"`) {
		t.Errorf("--default-budget 10: %v", err)
	}
	cfg := writeFile(t, "default-budget: 600\n")
	err = runServe(context.Background(), []string{"--config", cfg}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), `--default-budget: a duration needs a unit, e.g. "600s"`) {
		t.Errorf("default-budget: 600 in the config: %v", err)
	}
}
