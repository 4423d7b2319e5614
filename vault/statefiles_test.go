package vault_test

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/sqlite"
	"github.com/llmfleet/llmfleet/vault"
)

// TestNoKeyInStateFiles stores credentials the way llmfleet does, sealed
// by a vault whose secret file sits next to the database, with requests,
// results and ledger entries, and then reads every file of the state
// directory, database, WAL and shared memory included, while the store is
// open and after it is closed: no API key or token may be found in them,
// raw or encoded.
func TestNoKeyInStateFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "llmfleet")
	v, err := vault.Open(filepath.Join(dir, "secret"))
	if err != nil {
		t.Fatal(err)
	}
	db := &sqlite.DB{Path: filepath.Join(dir, "llmfleet.db")}
	if err := db.Open(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := t.Context()

	var cs []llmfleet.Credential
	for range 3 {
		cs = append(cs, llmfleet.Credential{APIKey: "sk-ant-api03-" + randomText(t)})
	}
	cs = append(cs, llmfleet.Credential{AuthToken: "sk-ant-oat01-" + randomText(t)})
	now := time.Now()
	for i, c := range cs {
		id := v.Fingerprint(c)
		sealed, err := v.Seal(c)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.PutCredential(ctx, id, sealed); err != nil {
			t.Fatal(err)
		}
		r := &llmfleet.StoredRequest{
			ID: "lfr_" + id, Provider: "anthropic", CredentialID: id,
			Header:     http.Header{"Anthropic-Version": {"2023-06-01"}},
			Body:       []byte(`{"model":"claude-sonnet-4-6","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`),
			Model:      "claude-sonnet-4-6",
			AcceptedAt: now,
		}
		if err := db.AddRequest(ctx, r); err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			_, err := db.CompleteRequests(ctx, []llmfleet.Completion{{RequestID: r.ID,
				Result: &llmfleet.StoredResult{StatusCode: 200, Body: []byte(`{}`), CompletedAt: now}}})
			if err != nil {
				t.Fatal(err)
			}
		}
		if err := db.AddLedger(ctx, []llmfleet.LedgerEntry{{RequestID: r.ID, Time: now, Provider: "anthropic"}}); err != nil {
			t.Fatal(err)
		}
	}

	scan := func(when string) {
		t.Helper()
		files, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var sawWAL bool
		for _, f := range files {
			b, err := os.ReadFile(filepath.Join(dir, f.Name()))
			if err != nil {
				t.Fatal(err)
			}
			sawWAL = sawWAL || filepath.Ext(f.Name()) == ".db-wal"
			for _, c := range cs {
				secret := c.APIKey + c.AuthToken
				for _, form := range []string{secret, hex.EncodeToString([]byte(secret)),
					base64.StdEncoding.EncodeToString([]byte(secret)), secret[len(secret)-16:]} {
					if bytes.Contains(b, []byte(form)) {
						t.Errorf("%s: %s holds a credential", when, f.Name())
					}
				}
			}
		}
		if when == "open" && !sawWAL {
			t.Errorf("no WAL file while the store is open: the scan missed it")
		}
	}
	scan("open")

	// What is stored is usable: every credential unseals from the store.
	for _, c := range cs {
		id := v.Fingerprint(c)
		sealed, err := db.GetCredential(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := v.Unseal(id, sealed); err != nil || got != c {
			t.Errorf("credential %s does not unseal from the store: %v", id, err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	scan("closed")
}

func randomText(t *testing.T) string {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}
