package llmfleet

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

// TestCredentialPrintsNothingOfTheKey checks that no way of printing or
// logging a Credential shows the key or a label under the public key
// (which would let a log reader confirm a guessed key).
func TestCredentialPrintsNothingOfTheKey(t *testing.T) {
	c := Credential{APIKey: "sk-ant-secret-key"}
	verbs := "%d %t %08.3f %x" // in a variable: vet would refuse them
	public := c.Fingerprint(nil)
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("x", "credential", c)
	outs := []string{
		c.String(), c.GoString(), c.LogValue().String(),
		fmt.Sprintf("%v %+v %#v %s", c, c, c, c),
		fmt.Sprintf("%v", struct{ C Credential }{c}),
		fmt.Sprintf(verbs, c, c, c, c),
		buf.String(),
	}
	for _, out := range outs {
		if strings.Contains(out, "secret") || strings.Contains(out, public) || strings.Contains(out, "cred_") {
			t.Errorf("printed %q", out)
		}
		if !strings.Contains(out, Redacted) {
			t.Errorf("printed %q, want %q in it", out, Redacted)
		}
	}
	if c.Fingerprint([]byte("instance secret")) == public {
		t.Error("keyed fingerprint equals the public one")
	}
}
