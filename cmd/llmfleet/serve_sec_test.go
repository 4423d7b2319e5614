package main

import (
	"context"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet/emulator"
	"github.com/llmfleet/llmfleet/proxy"
)

// TestServeClientKeysIsolation runs llmfleet serve in client-keys mode
// with --admin-key-env, twice on one database: a batch alice creates
// through the Batches API stays hers (bob gets 404 and does not list it)
// across the restart, also with a bearer token, and the stats answer
// with the admin key configured.
func TestServeClientKeysIsolation(t *testing.T) {
	emuTS := httptest.NewServer(&emulator.Server{Turnaround: func(string, *rand.Rand) time.Duration { return 0 }})
	defer emuTS.Close()
	t.Setenv("LLMFLEET_TEST_UPSTREAM", "sk-upstream")
	t.Setenv("LLMFLEET_TEST_ADMIN", "admin-secret")
	dir := t.TempDir()
	cfg := writeFile(t, "anthropic-url: "+emuTS.URL+"\n"+
		"upstream-api-key-env: LLMFLEET_TEST_UPSTREAM\nclient-keys:\n"+
		"  alice: "+proxy.HashKey("alice-key")+"\n  bob: "+proxy.HashKey("bob-key")+"\n")
	start := func() (string, func()) {
		ctx, cancel := context.WithCancel(context.Background())
		out := make(lineWriter, 4)
		done := make(chan error, 1)
		go func() {
			done <- runServe(ctx, []string{"--config", cfg, "--listen", "127.0.0.1:0",
				"--db", filepath.Join(dir, "llmfleet.db"), "--admin-key-env", "LLMFLEET_TEST_ADMIN"}, out, io.Discard)
		}()
		select {
		case line := <-out:
			return strings.Fields(strings.TrimPrefix(line, "llmfleet serving on "))[0], func() {
				cancel()
				if err := <-done; err != nil {
					t.Errorf("serve: %v", err)
				}
			}
		case err := <-done:
			t.Fatalf("serve ended: %v", err)
		}
		return "", nil
	}
	call := func(base, method, path, body, header, value string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set(header, value)
		req.Header.Set("Anthropic-Version", "2023-06-01")
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	base, stop := start()
	status, body := call(base, "POST", "/v1/messages/batches",
		`{"requests":[{"custom_id":"a","params":{"model":"claude-test","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}}]}`,
		"X-Api-Key", "alice-key")
	var b struct{ ID string }
	if status != 200 || json.Unmarshal([]byte(body), &b) != nil || b.ID == "" {
		t.Fatalf("alice creates: %d %s", status, body)
	}
	// A sync call, for the stats.
	call(base, "POST", "/v1/messages", `{"model":"claude-test","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`,
		"X-Api-Key", "alice-key")
	stop()

	base, stop = start()
	defer stop()
	if status, body := call(base, "GET", "/v1/messages/batches/"+b.ID, "", "X-Api-Key", "bob-key"); status != 404 || !strings.Contains(body, "not_found_error") {
		t.Fatalf("bob reads alice's batch after a restart: %d %s", status, body)
	}
	if _, body := call(base, "GET", "/v1/messages/batches", "", "Authorization", "Bearer bob-key"); strings.Contains(body, b.ID) {
		t.Fatalf("bob lists alice's batch: %s", body)
	}
	if status, body := call(base, "GET", "/v1/messages/batches/"+b.ID, "", "Authorization", "Bearer alice-key"); status != 200 || !strings.Contains(body, b.ID) {
		t.Fatalf("alice reads her batch with a bearer token after a restart: %d %s", status, body)
	}
	// Stats answer a client key and the admin key alike (what each sees is
	// observe's TestPerRequestFieldsForAdminOnly).
	for _, key := range []string{"alice-key", "admin-secret"} {
		status, body := call(base, "GET", "/llmfleet/v1/stats?since=1h", "", "X-Api-Key", key)
		if status != 200 || !strings.Contains(body, `"sync_calls":1`) {
			t.Fatalf("stats as %s: %d %s", key, status, body)
		}
	}
}
