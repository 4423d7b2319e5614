package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/emulator"
	"github.com/llmfleet/llmfleet/postgres"
	"github.com/llmfleet/llmfleet/postgres/pgtest"
)

// A read-only episode of the database while "llmfleet serve --db
// postgres://…" runs: the role serve connects as is made read-only for
// new sessions and the pool's sessions are ended, as an operator would to
// have the setting reach them; tickets are then answered 503, naming the
// database, with Retry-After. Once the setting is reset, new tickets are
// accepted again after at most a few failures, no backend killed
// (before, the sessions opened in the episode stayed read-only and most
// tickets failed until they were killed). Sync calls made in the episode
// are in the ledger once it ends (before, their entries were dropped).
func TestServeReadOnlyEpisode(t *testing.T) {
	bin := buildBinary(t)
	role := pgtest.NewRole(t)
	dir := t.TempDir()
	logs := filepath.Join(dir, "serve.log")
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(logs)
			t.Logf("logs of serve:\n%s", b)
		}
	})
	emu := &emulator.Server{Logger: slog.New(slog.DiscardHandler)}
	upstream := httptest.NewServer(emu)
	t.Cleanup(upstream.Close)
	s := start(t, bin, logs, "serve", "--listen", "127.0.0.1:0", "--anthropic-url", upstream.URL,
		"--db", role.URL, "--secret-file", filepath.Join(dir, "secret"), "--replica-name", "r0",
		"--batch-window", "1h", "--batch-min-size", "1000", "--shutdown-timeout", "1s")
	c := &crashClient{t: t, key: "sk-ant-api03-readonly-" + llmfleet.NewID("")}
	n := 0
	ticket := func() (int, http.Header, []byte) {
		n++
		body := fmt.Sprintf(`{"model":"claude-test","max_tokens":64,"messages":[{"role":"user","content":"ticket %d"}]}`, n)
		return c.do("POST", s.url+"/v1/messages", body, "Prefer", "respond-async")
	}
	for range 3 {
		if code, _, b := ticket(); code != http.StatusAccepted {
			t.Fatalf("ticket before the episode: %d %s", code, b)
		}
	}

	role.SetReadOnly(t, true)
	endPoolSessions(t, role)
	refused := false
	for i := 0; i < 50 && !refused; i++ {
		code, h, b := ticket()
		var env struct {
			Error struct{ Type, Message string }
		}
		json.Unmarshal(b, &env)
		switch {
		case code == http.StatusAccepted:
			continue // on a session that had not been taken since it ended
		case code != http.StatusServiceUnavailable || h.Get("Retry-After") == "" ||
			!strings.HasPrefix(env.Error.Message, "llmfleet could not record the request in its database ("):
			t.Fatalf("ticket in the episode: %d Retry-After %q %s", code, h.Get("Retry-After"), b)
		}
		refused = strings.Contains(env.Error.Message, "read-only transaction (SQLSTATE 25006)")
	}
	if !refused {
		t.Fatal("no ticket refused as read-only in the episode")
	}
	// Sync calls made in the episode are answered; their ledger entries,
	// which the database refuses for now, are kept and written once it
	// takes them again.
	for i := range 2 {
		body := fmt.Sprintf(`{"model":%q,"max_tokens":64,"messages":[{"role":"user","content":"sync %d"}]}`, billModel, i)
		if code, _, b := c.do("POST", s.url+"/v1/messages", body); code != http.StatusOK {
			t.Fatalf("sync call in the episode: %d %s", code, b)
		}
	}

	role.SetReadOnly(t, false)
	const wantAccepted, maxFailures = 10, 3
	failures := 0
	for accepted := 0; accepted < wantAccepted; {
		code, _, b := ticket()
		if code == http.StatusAccepted {
			accepted++
			continue
		}
		if failures++; failures > maxFailures {
			t.Fatalf("ticket %d after the episode (%d accepted since, %d failed): %d %s", n, accepted, failures, code, b)
		}
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	if err := s.cmd.Wait(); err != nil {
		t.Errorf("serve did not stop cleanly: %v", err)
	}
	store, err := postgres.Open(context.Background(), role.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	entries, err := store.Ledger(context.Background(), time.Unix(0, 0), time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	var syncUSD float64
	syncCalls := 0
	for _, e := range entries {
		if e.Route == llmfleet.RouteSync && e.Outcome == "ok" {
			syncCalls++
			syncUSD += e.CostUSD
		}
	}
	billed := 0
	for _, b := range emu.Stats().Bills {
		if !b.Batch {
			billed++
		}
	}
	if syncCalls != billed || billed != 2 || syncUSD == 0 {
		t.Errorf("ledger: %d sync entries ($%.6f) for %d sync answers billed; want the 2 sync calls of the episode", syncCalls, syncUSD, billed)
	}
}

// endPoolSessions ends the idle sessions of role's pool (not the one
// holding the replica name's advisory lock, nor the one listening for
// completions), and waits until they are gone.
func endPoolSessions(t *testing.T, role *pgtest.Role) {
	t.Helper()
	const pool = `FROM pg_stat_activity WHERE usename = $1 AND state = 'idle' AND query NOT LIKE 'LISTEN%'
		AND pid NOT IN (SELECT pid FROM pg_locks WHERE locktype = 'advisory')`
	if _, err := role.Admin.Exec(`SELECT pg_terminate_backend(pid) `+pool, role.Name); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		var left int
		if err := role.Admin.QueryRow(`SELECT count(*) `+pool, role.Name).Scan(&left); err != nil {
			t.Fatal(err)
		}
		if left == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d sessions of the pool still there", left)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
