package webhook_test

import (
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3/option"
	sdkwebhooks "github.com/openai/openai-go/v3/webhooks"

	"github.com/llmfleet/llmfleet/webhook"
)

// secret is a whsec_ secret of 32 bytes, as OpenAI's dashboard shows one.
var secret = "whsec_" + base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))

func TestParseSecret(t *testing.T) {
	key, err := webhook.ParseSecret(secret)
	if err != nil || string(key) != "0123456789abcdef0123456789abcdef" {
		t.Errorf("whsec_ secret: %q %v", key, err)
	}
	if key, err := webhook.ParseSecret("plain-secret"); err != nil || string(key) != "plain-secret" {
		t.Errorf("raw secret: %q %v", key, err)
	}
	for _, bad := range []string{"", "whsec_not*base64", "whsec_" + base64.StdEncoding.EncodeToString([]byte("short"))} {
		if _, err := webhook.ParseSecret(bad); err == nil {
			t.Errorf("ParseSecret(%q) accepted", bad)
		}
	}
}

// headers returns the headers of a delivery of body signed with sigs.
func headers(id string, ts time.Time, sigs ...string) http.Header {
	return http.Header{"Webhook-Id": {id}, "Webhook-Timestamp": {strconv.FormatInt(ts.Unix(), 10)},
		"Webhook-Signature": {strings.Join(sigs, " ")}}
}

// A delivery signed with Sign verifies with the official openai-go SDK
// and with Verify; one whose body was altered verifies with neither.
func TestSignMatchesSDK(t *testing.T) {
	key, _ := webhook.ParseSecret(secret)
	now := time.Unix(1_790_000_000, 0)
	body := []byte(`{"id":"evt_1","object":"event","created_at":1790000000,"type":"batch.completed","data":{"id":"batch_abc"}}`)
	h := headers("wh_1", now, "v1,bm90IHRoaXMgb25l", webhook.Sign(key, "wh_1", now, body))
	sdk := sdkwebhooks.NewWebhookService(option.WithWebhookSecret(secret))
	if err := sdk.VerifySignatureWithToleranceAndTime(body, h, webhook.Tolerance, now); err != nil {
		t.Errorf("the SDK refuses Sign's signature: %v", err)
	}
	if err := webhook.Verify(key, h, body, now); err != nil {
		t.Errorf("Verify: %v", err)
	}
	altered := []byte(strings.Replace(string(body), "batch_abc", "batch_xyz", 1))
	if sdk.VerifySignatureWithToleranceAndTime(altered, h, webhook.Tolerance, now) == nil {
		t.Error("the SDK takes an altered body")
	}
	if err := webhook.Verify(key, h, altered, now); err == nil || err.(*webhook.Refusal).Status != http.StatusUnauthorized {
		t.Errorf("Verify of an altered body: %v", err)
	}
}
