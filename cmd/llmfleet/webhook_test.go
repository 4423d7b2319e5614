package main

import (
	"context"
	"encoding/base64"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet/emulator"
	"github.com/llmfleet/llmfleet/webhook"
)

// TestServeOpenAIWebhookSecretEnv: --openai-webhook-secret-env names the
// variable of the webhooks' secret (default OPENAI_WEBHOOK_SECRET; the
// config file's key of the same name sets it too); an unset variable
// leaves webhooks off, a malformed secret fails the start naming the
// flag; llmfleet serve takes a signed delivery at
// /llmfleet/v1/webhooks/openai over loopback and refuses a bad
// signature (401) and a stale timestamp (400).
func TestServeOpenAIWebhookSecretEnv(t *testing.T) {
	secret := "whsec_" + base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))
	configOf := func(args ...string) (string, []byte, error) {
		t.Helper()
		f, err := parseServeFlags(args, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := f.config(slog.New(slog.DiscardHandler))
		return cfg.OpenAIWebhookSecretEnv, cfg.OpenAIWebhookSecret, err
	}
	t.Setenv("OPENAI_WEBHOOK_SECRET", "")
	if env, key, err := configOf(); env != "OPENAI_WEBHOOK_SECRET" || key != nil || err != nil {
		t.Errorf("default: $%s %q %v, want OPENAI_WEBHOOK_SECRET, off", env, key, err)
	}
	t.Setenv("LLMFLEET_TEST_HOOK", "whsec_c2hvcnQ=")
	if _, _, err := configOf("--openai-webhook-secret-env", "LLMFLEET_TEST_HOOK"); err == nil || !strings.Contains(err.Error(), "--openai-webhook-secret-env: $LLMFLEET_TEST_HOOK") {
		t.Errorf("a malformed secret: %v", err)
	}
	t.Setenv("LLMFLEET_TEST_HOOK", secret)
	cfgFile := writeFile(t, "openai-webhook-secret-env: LLMFLEET_TEST_HOOK\n")
	if env, key, err := configOf("--config", cfgFile); env != "LLMFLEET_TEST_HOOK" || string(key) != "0123456789abcdef0123456789abcdef" || err != nil {
		t.Errorf("config file: $%s %q %v", env, key, err)
	}

	emu := httptest.NewServer(&emulator.Server{Turnaround: func(string, *rand.Rand) time.Duration { return 0 }})
	t.Cleanup(emu.Close)
	ctx, cancel := context.WithCancel(context.Background())
	out, done := make(lineWriter, 4), make(chan error, 1)
	go func() {
		done <- runServe(ctx, []string{"--config", cfgFile, "--listen", "127.0.0.1:0", "--anthropic-url", emu.URL,
			"--db", filepath.Join(t.TempDir(), "llmfleet.db")}, out, io.Discard)
	}()
	var base string
	select {
	case line := <-out:
		base = strings.Fields(strings.TrimPrefix(line, "llmfleet serving on "))[0]
	case err := <-done:
		t.Fatalf("serve ended: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	key, _ := webhook.ParseSecret(secret)
	body := []byte(`{"id":"evt_1","object":"event","created_at":1790000000,"type":"batch.completed","data":{"id":"batch_unknown"}}`)
	post := func(ts time.Time, sig string) int {
		req, _ := http.NewRequest(http.MethodPost, base+webhook.OpenAIPath, strings.NewReader(string(body)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Webhook-Id", "wh_"+strconv.FormatInt(ts.UnixNano(), 10))
		req.Header.Set("Webhook-Timestamp", strconv.FormatInt(ts.Unix(), 10))
		req.Header.Set("Webhook-Signature", sig)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	now := time.Now()
	sign := func(ts time.Time) string {
		return webhook.Sign(key, "wh_"+strconv.FormatInt(ts.UnixNano(), 10), ts, body)
	}
	if got := post(now, sign(now)); got != http.StatusOK {
		t.Errorf("a signed delivery for a batch not tracked here: %d, want 200", got)
	}
	if got := post(now, "v1,"+base64.StdEncoding.EncodeToString(make([]byte, 32))); got != http.StatusUnauthorized {
		t.Errorf("a bad signature: %d, want 401", got)
	}
	stale := now.Add(-time.Hour)
	if got := post(stale, sign(stale)); got != http.StatusBadRequest {
		t.Errorf("a stale timestamp: %d, want 400", got)
	}
}
