package vault_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/vault"
)

// sealedUnderTestSecret are blobs sealed once under testSecret, with the
// fingerprints of their credentials.
var sealedUnderTestSecret = []struct {
	id, apiKey, authToken, sealedHex string
}{
	{"cred_88978bcbeb14dcebc2befa06", "sk-ant-api03-fuzz", "", "019fd592da92436b5a03a8be2ebacbc0366d45a203a4bd52e89f26193c3a1a751502e9b2cbd2f03e761c1e66001935d3"},
	{"cred_f5811aa01542a3c67a78e08d", "", "sk-ant-oat01-fuzz", "01bcaa429be798020804b845c3f7865faed953907c469c6de8790de2b06ee1c70141afb374649e33a9092aaf9a73907c"},
	{"cred_b02acc4513af5bedaa07c41e", "both", "set", "017cd00b742a667a5058ef7e95a19b405fb36cda4654372b1cc658b92ac24412e9a2be600c74"},
}

// testSecret is the secret of sealedUnderTestSecret: bytes 0 to 31.
func testSecret() []byte {
	s := make([]byte, vault.SecretSize)
	for i := range s {
		s[i] = byte(i)
	}
	return s
}

// FuzzUnseal unseals arbitrary blobs under arbitrary credential ids: it
// must never panic, and must fail with ErrUnseal for everything but the
// blobs sealedUnderTestSecret holds, unchanged, under their own ids.
func FuzzUnseal(f *testing.F) {
	v, err := vault.New(testSecret())
	if err != nil {
		f.Fatal(err)
	}
	for i, s := range sealedUnderTestSecret {
		blob, _ := hex.DecodeString(s.sealedHex)
		f.Add(s.id, blob)
		other := sealedUnderTestSecret[(i+1)%len(sealedUnderTestSecret)].id
		f.Add(other, blob)
		f.Add(s.id, blob[:len(blob)-1])
	}
	f.Add("", []byte{})
	f.Add("cred_x", []byte{1})
	f.Fuzz(func(t *testing.T, id string, sealed []byte) {
		c, err := v.Unseal(id, sealed)
		if err != nil {
			if !errors.Is(err, vault.ErrUnseal) || c != (llmfleet.Credential{}) {
				t.Fatalf("Unseal(%q, %x) = %v, %v", id, sealed, c, err)
			}
			return
		}
		for _, s := range sealedUnderTestSecret {
			blob, _ := hex.DecodeString(s.sealedHex)
			if id == s.id && bytes.Equal(sealed, blob) {
				if c != (llmfleet.Credential{APIKey: s.apiKey, AuthToken: s.authToken}) {
					t.Fatalf("Unseal(%q) = %v", id, c)
				}
				return
			}
		}
		t.Fatalf("Unseal(%q, %x) opened a blob it never sealed: %v", id, sealed, c)
	})
}
