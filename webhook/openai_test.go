package webhook_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet/providertest"
	"github.com/llmfleet/llmfleet/webhook"
)

// event is an OpenAI webhook event's body.
func event(typ, batchID string) []byte {
	return []byte(fmt.Sprintf(`{"id":"evt_%s","object":"event","created_at":1790000000,"type":%q,"data":{"id":%q}}`, batchID, typ, batchID))
}

// deliver POSTs body to url with h and returns the status and the
// error envelope's code, if any.
func deliver(t *testing.T, url string, h http.Header, body []byte) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+webhook.OpenAIPath, strings.NewReader(string(body)))
	for k, v := range h {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var env struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	json.Unmarshal(b, &env)
	if res.StatusCode != http.StatusOK && env.Error.Message == "" {
		t.Errorf("%d without an error message: %s", res.StatusCode, b)
	}
	return res.StatusCode, env.Error.Code
}

// pollLog records the batches PollNow was asked to look at.
type pollLog struct {
	mu    sync.Mutex
	ids   []string
	known map[string]bool
}

func (p *pollLog) pollNow(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ids = append(p.ids, id)
	return p.known[id]
}

func (p *pollLog) asked() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.ids...)
}

// TestOpenAIWebhook: over loopback, a signed batch event makes PollNow
// look at its batch (200, known or not); a stale or future timestamp is
// 400, a bad signature 401, a missing header 400; other events and a
// delivery sent again are acknowledged and ignored.
func TestOpenAIWebhook(t *testing.T) {
	key, _ := webhook.ParseSecret(secret)
	clock := providertest.NewManualClock(time.Unix(1_790_000_000, 0))
	polls := &pollLog{known: map[string]bool{"batch_known": true}}
	srv := httptest.NewServer((&webhook.OpenAI{Secret: key, PollNow: polls.pollNow, Clock: clock}).Mount(http.NotFoundHandler()))
	t.Cleanup(srv.Close)
	now := clock.Now()
	signed := func(id string, ts time.Time, body []byte) http.Header {
		return headers(id, ts, webhook.Sign(key, id, ts, body))
	}
	for _, c := range []struct {
		name   string
		h      http.Header
		body   []byte
		status int
		code   string
	}{
		{"known batch", signed("wh_1", now, event("batch.completed", "batch_known")), event("batch.completed", "batch_known"), 200, ""},
		{"unknown batch", signed("wh_2", now, event("batch.failed", "batch_other")), event("batch.failed", "batch_other"), 200, ""},
		{"sent again", signed("wh_1", now, event("batch.completed", "batch_known")), event("batch.completed", "batch_known"), 200, ""},
		{"another event", signed("wh_3", now, event("response.completed", "resp_1")), event("response.completed", "resp_1"), 200, ""},
		{"several signatures", headers("wh_4", now, "v1,AAAA", "v1a,xyz", webhook.Sign(key, "wh_4", now, event("batch.expired", "batch_known"))),
			event("batch.expired", "batch_known"), 200, ""},
		{"stale", signed("wh_5", now.Add(-6*time.Minute), event("batch.completed", "batch_known")), event("batch.completed", "batch_known"), 400, "stale_timestamp"},
		{"future", signed("wh_6", now.Add(6*time.Minute), event("batch.completed", "batch_known")), event("batch.completed", "batch_known"), 400, "stale_timestamp"},
		{"bad signature", signed("wh_7", now, event("batch.completed", "batch_other")), event("batch.completed", "batch_known"), 401, "invalid_signature"},
		{"no signature", http.Header{"Webhook-Id": {"wh_8"}, "Webhook-Timestamp": {fmt.Sprint(now.Unix())}}, event("batch.completed", "batch_known"), 400, "missing_header"},
	} {
		status, code := deliver(t, srv.URL, c.h, c.body)
		if status != c.status || code != c.code {
			t.Errorf("%s: %d %q, want %d %q", c.name, status, code, c.status, c.code)
		}
	}
	if got, want := polls.asked(), []string{"batch_known", "batch_other", "batch_known"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("PollNow asked for %v, want %v", got, want)
	}
	res, err := http.Get(srv.URL + webhook.OpenAIPath)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusMethodNotAllowed || res.Header.Get("Allow") != http.MethodPost {
		t.Errorf("GET: %d Allow %q", res.StatusCode, res.Header.Get("Allow"))
	}
}

// Without a secret, a delivery is answered 503 naming the variable to
// set; nothing is polled.
func TestOpenAIWebhookOff(t *testing.T) {
	polls := &pollLog{}
	srv := httptest.NewServer(&webhook.OpenAI{SecretEnv: "OPENAI_WEBHOOK_SECRET", PollNow: polls.pollNow})
	t.Cleanup(srv.Close)
	res, err := http.Post(srv.URL+webhook.OpenAIPath, "application/json", strings.NewReader(string(event("batch.completed", "b"))))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(b), "$OPENAI_WEBHOOK_SECRET") || len(polls.asked()) != 0 {
		t.Errorf("%d %s (polled %v)", res.StatusCode, b, polls.asked())
	}
}
