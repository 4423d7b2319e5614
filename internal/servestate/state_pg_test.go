package servestate

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
	if _, err := Open(t.Context(), Config{DB: u, Getenv: func(string) string { return "" }, Logger: log, Replica: "r1"}); err == nil || !strings.Contains(err.Error(), SecretEnv) {
		t.Fatalf("no secret: %v", err)
	}
	st, err := Open(t.Context(), Config{DB: u, Getenv: env, Logger: log, Replica: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.DB.Close()
	if strings.Contains(st.Where, "search_path") == false {
		t.Errorf("where %q", st.Where)
	}
	if _, err := Open(t.Context(), Config{DB: u, Getenv: env, Logger: log, Replica: "r1"}); !errors.Is(err, llmfleet.ErrLocked) {
		t.Fatalf("a second serve under the same replica name: %v, want ErrLocked", err)
	}
	st.DB.Close()
	st2, err := Open(t.Context(), Config{DB: u, Getenv: env, Logger: log, Replica: "r1"})
	if err != nil {
		t.Fatalf("after the first closed: %v", err)
	}
	st2.DB.Close()
}
