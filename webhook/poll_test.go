package webhook_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/dispatch"
	"github.com/llmfleet/llmfleet/openai"
	"github.com/llmfleet/llmfleet/openaiemu"
	"github.com/llmfleet/llmfleet/providertest"
	"github.com/llmfleet/llmfleet/webhook"
)

// TestOpenAIWebhookPollsBatch: the dispatcher polls an OpenAI batch every
// hour; the batch ends upstream a minute after its create, and its
// batch.completed webhook, delivered over loopback, has it looked at and
// answered at once, on an injected clock that never reaches the next
// scheduled poll.
func TestOpenAIWebhookPollsBatch(t *testing.T) {
	clock := providertest.NewManualClock(time.Unix(1_790_000_000, 0))
	emu := httptest.NewServer(&openaiemu.Server{Clock: clock, BatchTurnaround: time.Minute})
	t.Cleanup(emu.Close)
	prov := &openai.Provider{BaseURL: emu.URL, HTTPClient: emu.Client(), Clock: clock}
	d := &dispatch.Dispatcher{Providers: []llmfleet.Provider{prov}, Clock: clock,
		Policy: dispatch.Policy{BatchMinSize: 1, PollInterval: time.Hour, MaxPollInterval: time.Hour, NoRescue: true}}
	if err := d.Open(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second) // a batch left in flight is not awaited
		defer cancel()
		d.Close(ctx)
	})
	key, _ := webhook.ParseSecret(secret)
	hooks := httptest.NewServer((&webhook.OpenAI{Secret: key, Clock: clock,
		PollNow: func(id string) bool { return d.PollNow(prov.Name(), id) }}).Mount(http.NotFoundHandler()))
	t.Cleanup(hooks.Close)

	start := clock.Now()
	answered := make(chan *llmfleet.Response, 1)
	go func() {
		resp, err := d.SubmitBatch(t.Context(), 0, &llmfleet.Request{Provider: openai.Name, Credential: llmfleet.Credential{APIKey: "sk-hook"},
			Body: []byte(`{"model":"gpt-4.1","messages":[{"role":"user","content":"hello"}]}`)})
		if err != nil {
			t.Error(err)
		}
		answered <- resp
	}()
	id := awaitFlight(t, d, clock)
	clock.Advance(2 * time.Minute) // ended upstream; the next poll is due at 1h
	select {
	case <-answered:
		t.Fatal("answered before the webhook")
	default:
	}
	body := event("batch.completed", id)
	if status, code := deliver(t, hooks.URL, signedNow(key, "wh_1", clock.Now(), body), body); status != http.StatusOK {
		t.Fatalf("webhook: %d %s", status, code)
	}
	clock.Advance(0) // runs the timers due now: time does not move
	select {
	case resp := <-answered:
		if resp == nil || resp.Route != llmfleet.RouteBatch || resp.StatusCode != http.StatusOK {
			t.Errorf("answer %+v", resp)
		}
	case <-time.After(30 * time.Second): // a guard against a hang, not a measure
		t.Fatal("the webhook did not have the batch looked at")
	}
	if at := clock.Now().Sub(start); at >= time.Hour {
		t.Errorf("answered at +%s, not before the scheduled poll", at)
	}
}

func signedNow(key []byte, id string, now time.Time, body []byte) http.Header {
	return headers(id, now, webhook.Sign(key, id, now, body))
}

// awaitFlight waits until the dispatcher has a batch in flight, running
// the clock's due timers (the pool's flush), and returns its id.
func awaitFlight(t *testing.T, d *dispatch.Dispatcher, clock *providertest.ManualClock) string {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if fs := d.InFlight(); len(fs) == 1 {
			return fs[0].ID
		}
		clock.Advance(0)
	}
	t.Fatal("no batch went out")
	return ""
}
