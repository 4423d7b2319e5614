package vault_test

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/vault"
)

func newVault(t *testing.T) (*vault.Vault, []byte) {
	t.Helper()
	secret := make([]byte, vault.SecretSize)
	rand.Read(secret)
	v, err := vault.New(secret)
	if err != nil {
		t.Fatal(err)
	}
	return v, secret
}

var creds = []llmfleet.Credential{
	{APIKey: "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789"},
	{AuthToken: "sk-ant-oat01-token"},
	{APIKey: "both", AuthToken: "set"},
	{APIKey: "k\x00with nul and \u00e9"},
}

func TestRoundTrip(t *testing.T) {
	v, _ := newVault(t)
	for _, c := range creds {
		id := v.Fingerprint(c)
		sealed, err := v.Seal(c)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(sealed, []byte(c.APIKey)) && c.APIKey != "" || bytes.Contains(sealed, []byte(c.AuthToken)) && c.AuthToken != "" {
			t.Errorf("sealed blob contains the secret")
		}
		got, err := v.Unseal(id, sealed)
		if err != nil {
			t.Fatalf("Unseal: %v", err)
		}
		if got != c {
			t.Errorf("Unseal = %v, want %v", got, c)
		}
		again, _ := v.Seal(c)
		if bytes.Equal(sealed, again) {
			t.Error("sealing twice gave the same blob: the nonce is not fresh")
		}
	}
	if _, err := v.Seal(llmfleet.Credential{}); err == nil {
		t.Error("Seal of an empty credential: no error")
	}
}

func TestTamper(t *testing.T) {
	v, _ := newVault(t)
	c := creds[0]
	id := v.Fingerprint(c)
	sealed, _ := v.Seal(c)
	for i := range sealed {
		for _, bit := range []byte{0x01, 0x80} {
			bad := bytes.Clone(sealed)
			bad[i] ^= bit
			if _, err := v.Unseal(id, bad); !errors.Is(err, vault.ErrUnseal) {
				t.Fatalf("byte %d flipped: Unseal error %v, want ErrUnseal", i, err)
			}
		}
	}
	for _, bad := range [][]byte{nil, {}, sealed[:len(sealed)-1], sealed[:13], append(bytes.Clone(sealed), 0)} {
		if _, err := v.Unseal(id, bad); !errors.Is(err, vault.ErrUnseal) {
			t.Errorf("truncated or extended blob (%d bytes): Unseal error %v", len(bad), err)
		}
	}
}

// TestSwap: a blob stored under another credential's id does not unseal.
func TestSwap(t *testing.T) {
	v, _ := newVault(t)
	a, b := creds[0], creds[1]
	sealedA, _ := v.Seal(a)
	if _, err := v.Unseal(v.Fingerprint(b), sealedA); !errors.Is(err, vault.ErrUnseal) {
		t.Errorf("A's blob under B's id: Unseal error %v, want ErrUnseal", err)
	}
}

func TestWrongSecret(t *testing.T) {
	v1, _ := newVault(t)
	v2, _ := newVault(t)
	c := creds[0]
	sealed, _ := v1.Seal(c)
	if _, err := v2.Unseal(v1.Fingerprint(c), sealed); !errors.Is(err, vault.ErrUnseal) {
		t.Errorf("Unseal under another secret: %v, want ErrUnseal", err)
	}
	if v1.Fingerprint(c) == v2.Fingerprint(c) {
		t.Error("fingerprints under two secrets are equal")
	}
	if _, err := vault.New(make([]byte, vault.SecretSize-1)); err == nil {
		t.Error("New with a short secret: no error")
	}
}

func TestFingerprint(t *testing.T) {
	v, secret := newVault(t)
	same, _ := vault.New(bytes.Clone(secret))
	seen := map[string]bool{}
	for _, c := range creds {
		fp := v.Fingerprint(c)
		if !strings.HasPrefix(fp, "cred_") || fp != same.Fingerprint(c) {
			t.Errorf("Fingerprint %q, under the same secret %q", fp, same.Fingerprint(c))
		}
		if fp == c.Fingerprint(nil) || fp == c.Fingerprint(secret) {
			t.Errorf("Fingerprint is keyed by the secret itself or by no key")
		}
		if seen[fp] {
			t.Errorf("two credentials share fingerprint %s", fp)
		}
		seen[fp] = true
	}
}

// TestPrintsNoKey: formatting a Vault, as a careless log line would, shows
// no key material.
func TestPrintsNoKey(t *testing.T) {
	v, _ := newVault(t)
	for _, f := range []string{"%v", "%+v", "%#v", "%s"} {
		if got := fmt.Sprintf(f, v); got != "vault.Vault" {
			t.Errorf("Sprintf(%q, vault) = %q", f, got)
		}
	}
	if got := v.LogValue().String(); got != "vault.Vault" {
		t.Errorf("LogValue = %q", got)
	}
}

func TestOpenCreates(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	path := filepath.Join(dir, "secret")
	v, err := vault.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]os.FileMode{dir: 0o700, path: 0o600} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", p, fi.Mode().Perm(), want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("state directory holds %d files, want the secret only", len(entries))
	}
	// Reopened, the same secret: what was sealed unseals.
	c := creds[0]
	sealed, _ := v.Seal(c)
	v2, err := vault.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := v2.Unseal(v.Fingerprint(c), sealed); err != nil || got != c {
		t.Errorf("Unseal after reopening: %v, %v", got, err)
	}
}

func TestOpenOperatorFile(t *testing.T) {
	dir := t.TempDir()
	secret := bytes.Repeat([]byte{0xab}, vault.SecretSize)
	raw := filepath.Join(dir, "raw")
	hexed := filepath.Join(dir, "hex")
	os.WriteFile(raw, secret, 0o600)
	os.WriteFile(hexed, []byte(strings.Repeat("ab", vault.SecretSize)+"\n"), 0o400)
	want, _ := vault.New(secret)
	for _, p := range []string{raw, hexed} {
		v, err := vault.Open(p)
		if err != nil {
			t.Fatalf("Open(%s): %v", filepath.Base(p), err)
		}
		if v.Fingerprint(creds[0]) != want.Fingerprint(creds[0]) {
			t.Errorf("Open(%s): another secret than the file's", filepath.Base(p))
		}
	}
	bad := filepath.Join(dir, "bad")
	os.WriteFile(bad, []byte("too short"), 0o600)
	if _, err := vault.Open(bad); err == nil {
		t.Error("Open of a malformed secret file: no error")
	}
}

func TestOpenRefusesLoosePermissions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "secret")
	if _, err := vault.Open(path); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	for _, mode := range []os.FileMode{0o640, 0o604, 0o660, 0o644} {
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		if _, err := vault.Open(path); err == nil {
			t.Errorf("Open of a secret file with mode %v: no error", mode)
		}
	}
	// Refused, not replaced.
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Error("the refused secret file was changed")
	}
}
