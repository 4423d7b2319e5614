package openai_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/openai"
	"github.com/llmfleet/llmfleet/openaiemu"
	"github.com/llmfleet/llmfleet/providertest"
)

// GetBatch reports a Retry-After on a running batch's answer as its
// PollAfter, in seconds and as an HTTP date; an ended batch has none.
func TestGetBatchPollAfter(t *testing.T) {
	for _, c := range []struct {
		name   string
		header func(now time.Time) string
		want   time.Duration
	}{
		{"seconds", func(time.Time) string { return "10" }, 10 * time.Second},
		{"HTTP date", func(now time.Time) string { return now.Add(42 * time.Second).Format(http.TimeFormat) }, 42 * time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			clock := providertest.NewManualClock(time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC))
			em := &openaiemu.Server{Clock: clock, BatchTurnaround: time.Minute}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodGet {
					w.Header().Set("Retry-After", c.header(clock.Now()))
				}
				em.ServeHTTP(w, r)
			}))
			t.Cleanup(srv.Close)
			p := &openai.Provider{BaseURL: srv.URL, HTTPClient: srv.Client(), Clock: clock}
			cred := llmfleet.Credential{APIKey: "sk-test"}
			b, err := p.CreateBatch(t.Context(), cred, "tag", nil, []llmfleet.BatchItem{
				{CustomID: "tag-1", Params: []byte(`{"model":"gpt-4.1","messages":[{"role":"user","content":"hi"}]}`)}})
			if err != nil {
				t.Fatal(err)
			}
			got, err := p.GetBatch(t.Context(), cred, b.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status == llmfleet.BatchEnded || got.PollAfter != c.want {
				t.Errorf("running batch: status %q, PollAfter %s, want %s", got.Status, got.PollAfter, c.want)
			}
			clock.Advance(2 * time.Minute)
			got, err = p.GetBatch(t.Context(), cred, b.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != llmfleet.BatchEnded || got.PollAfter != 0 {
				t.Errorf("ended batch: status %q, PollAfter %s, want none", got.Status, got.PollAfter)
			}
		})
	}
}
