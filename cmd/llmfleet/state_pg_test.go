package main

import (
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/llmfleet/llmfleet"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/llmfleet/llmfleet/postgres/pgtest"
)

// --db takes a PostgreSQL URL: it needs the secret given, and a second
// serve on the same database and schema is refused (ErrLocked) until
// replicas share the engine.
func TestStatePostgres(t *testing.T) {
	u := pgtest.URL(t)
	secret := strings.Repeat("ab", 32)
	env := func(k string) string {
		if k == SecretEnv {
			return secret
		}
		return ""
	}
	log := slog.New(slog.DiscardHandler)
	if _, err := openState(t.Context(), u, "", func(string) string { return "" }, log, fleetReplica{name: "r1"}); err == nil || !strings.Contains(err.Error(), SecretEnv) {
		t.Fatalf("no secret: %v", err)
	}
	st, err := openState(t.Context(), u, "", env, log, fleetReplica{name: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.db.Close()
	if strings.Contains(st.where, "search_path") == false {
		t.Errorf("where %q", st.where)
	}
	if _, err := openState(t.Context(), u, "", env, log, fleetReplica{name: "r1"}); !errors.Is(err, llmfleet.ErrLocked) {
		t.Fatalf("a second serve under the same replica name: %v, want ErrLocked", err)
	}
	st.db.Close()
	st2, err := openState(t.Context(), u, "", env, log, fleetReplica{name: "r1"})
	if err != nil {
		t.Fatalf("after the first closed: %v", err)
	}
	st2.db.Close()
}
