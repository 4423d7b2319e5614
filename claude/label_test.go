package claude

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/llmfleet/llmfleet"
)

// TestRetryLogLabelsCredential checks that a retry log line names the
// credential by CredentialLabel, or as llmfleet.Redacted without one, and
// never by the key or a label under the public key.
func TestRetryLogLabelsCredential(t *testing.T) {
	for _, label := range []func(llmfleet.Credential) string{nil, func(llmfleet.Credential) string { return "cred_keyed" }} {
		p, f, _ := newFake(t)
		var buf bytes.Buffer
		p.Logger = slog.New(slog.NewTextHandler(&buf, nil))
		p.CredentialLabel = label
		firstCreates(f, 1, refused(429))
		if _, err := p.CreateBatch(context.Background(), testCred, "t1", nil, items("t1", 1)); err != nil {
			t.Fatal(err)
		}
		out := buf.String()
		want := llmfleet.Redacted
		if label != nil {
			want = "cred_keyed"
		}
		if !strings.Contains(out, "anthropic: retrying") || !strings.Contains(out, want) ||
			strings.Contains(out, testCred.APIKey) || strings.Contains(out, testCred.Fingerprint(nil)) {
			t.Errorf("log %q, want the label %q", out, want)
		}
	}
}
