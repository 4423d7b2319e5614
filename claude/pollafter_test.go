package claude_test

import (
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/claude"
	"github.com/llmfleet/llmfleet/emulator"
	"github.com/llmfleet/llmfleet/providertest"
)

// GetBatch reports a running batch's Retry-After as its PollAfter, in
// seconds (as the API sends it) and as an HTTP date; an ended batch has
// none.
func TestGetBatchPollAfter(t *testing.T) {
	start := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name   string
		header func(now time.Time) string // "" leaves the emulator's own
		want   time.Duration
	}{
		{"seconds", nil, 10 * time.Second},
		{"HTTP date", func(now time.Time) string { return now.Add(42 * time.Second).Format(http.TimeFormat) }, 42 * time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			clock := providertest.NewManualClock(start)
			em := &emulator.Server{Clock: clock, Turnaround: func(string, *rand.Rand) time.Duration { return time.Minute }}
			var next http.Handler = em
			if c.header != nil {
				em.BatchRetryAfter = -1
				next = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.Method == http.MethodGet {
						w.Header().Set("Retry-After", c.header(clock.Now()))
					}
					em.ServeHTTP(w, r)
				})
			}
			srv := httptest.NewServer(next)
			t.Cleanup(srv.Close)
			p := &claude.Provider{BaseURL: srv.URL, HTTPClient: srv.Client(), Clock: clock}
			b, err := p.CreateBatch(t.Context(), emuCred, "tag", nil, []llmfleet.BatchItem{
				{CustomID: "tag-1", Params: []byte(`{"model":"claude-sonnet-4-6","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`)}})
			if err != nil {
				t.Fatal(err)
			}
			got, err := p.GetBatch(t.Context(), emuCred, b.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != llmfleet.BatchInProgress || got.PollAfter != c.want {
				t.Errorf("running batch: status %q, PollAfter %s, want %s", got.Status, got.PollAfter, c.want)
			}
			clock.Advance(2 * time.Minute)
			got, err = p.GetBatch(t.Context(), emuCred, b.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != llmfleet.BatchEnded || got.PollAfter != 0 {
				t.Errorf("ended batch: status %q, PollAfter %s, want none", got.Status, got.PollAfter)
			}
		})
	}
}
