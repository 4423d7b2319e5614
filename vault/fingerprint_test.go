package vault

import (
	"bytes"
	"strings"
	"sync"
	"testing"

	"github.com/llmfleet/llmfleet"
)

// TestFingerprintMatchesCredential: the vault's pooled HMAC gives what
// llmfleet.Credential.Fingerprint gives under the vault's key, for keys
// short and long, in either field, concurrently.
func TestFingerprintMatchesCredential(t *testing.T) {
	v, err := New(bytes.Repeat([]byte{7}, SecretSize))
	if err != nil {
		t.Fatal(err)
	}
	creds := []llmfleet.Credential{{}, {APIKey: "sk-ant-1"}, {AuthToken: "tok"}, {APIKey: "a", AuthToken: "b"},
		{APIKey: strings.Repeat("k", 500)}}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for _, c := range creds {
				if got, want := v.Fingerprint(c), c.Fingerprint(v.fpKey); got != want {
					t.Errorf("Fingerprint = %s, want %s", got, want)
				}
			}
		})
	}
	wg.Wait()
}
