package servestate

import (
	"encoding/base64"
	"encoding/hex"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmfleet/llmfleet"
)

// TestMain keeps the tests' databases out of the user's data directory:
// Open without a DB writes under $XDG_DATA_HOME.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "llmfleet-test-data-")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_DATA_HOME", dir)
	os.Unsetenv(SecretEnv)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func TestParseSecret(t *testing.T) {
	raw := []byte(strings.Repeat("\x01\xfe", 16))
	for _, s := range []string{
		hex.EncodeToString(raw), " " + hex.EncodeToString(raw) + "\n",
		base64.StdEncoding.EncodeToString(raw), base64.RawURLEncoding.EncodeToString(raw),
	} {
		got, err := parseSecret(s)
		if err != nil || string(got) != string(raw) {
			t.Errorf("parseSecret(%q) = %x, %v", s, got, err)
		}
	}
	if _, err := parseSecret("not a secret!"); err == nil {
		t.Error("parseSecret accepted garbage")
	}
}

func TestOpenState(t *testing.T) {
	quiet := slog.New(slog.DiscardHandler)
	dir := t.TempDir()
	db := filepath.Join(dir, "state", "llmfleet.db")
	noenv := func(string) string { return "" }

	// First start: the secret file is created 0600 beside the database.
	st, err := Open(t.Context(), Config{DB: db, Getenv: noenv, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(dir, "state", "llmfleet.secret")
	fi, err := os.Stat(secret)
	if err != nil || fi.Mode().Perm() != 0o600 || st.Secret != secret {
		t.Fatalf("secret file %v %v (%s)", fi, err, st.Secret)
	}
	c := llmfleet.Credential{APIKey: "sk-ant-test"}
	fp := st.Vault.Fingerprint(c)
	st.DB.Close()

	// Next start: the same secret, so the same fingerprints.
	st, err = Open(t.Context(), Config{DB: db, Getenv: noenv, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if st.Vault.Fingerprint(c) != fp {
		t.Fatal("the secret changed across restarts")
	}
	st.DB.Close()

	// An operator-given secret wins over the file; a bad one is refused.
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == SecretEnv {
				return v
			}
			return ""
		}
	}
	st, err = Open(t.Context(), Config{DB: db, Getenv: env(strings.Repeat("ab", 32)), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if st.Secret != "$"+SecretEnv || st.Vault.Fingerprint(c) == fp {
		t.Fatalf("secret from %s", st.Secret)
	}
	st.DB.Close()
	for _, bad := range []string{"abcd", "zz not base64 zz"} {
		if _, err := Open(t.Context(), Config{DB: db, Getenv: env(bad), Logger: quiet}); err == nil || !strings.Contains(err.Error(), SecretEnv) {
			t.Errorf("secret %q: %v", bad, err)
		}
	}

	// Without --db, the database goes to the user's data directory.
	st, err = Open(t.Context(), Config{DB: "", Getenv: noenv, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer st.DB.Close()
	if want := filepath.Join(os.Getenv("XDG_DATA_HOME"), "llmfleet", "llmfleet.db"); st.Where != want {
		t.Fatalf("default db %s, want %s", st.Where, want)
	}
}
