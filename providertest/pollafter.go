package providertest

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
)

// PollAfterRig is what RunPollAfter needs of a provider: its emulator, a
// batch turnaround of a minute on clock, and the provider over base,
// with a credential and a batch item it takes. The emulator's own
// Retry-After on running batches, if it sends one, is asked for by
// Own; any other wait is set over it.
type PollAfterRig struct {
	// Emulator returns the provider's emulator; own keeps its own
	// Retry-After on running batches (else it sends none).
	Emulator func(clock llmfleet.Clock, own bool) http.Handler
	// Provider returns the provider calling base.
	Provider func(base string, client *http.Client, clock llmfleet.Clock) llmfleet.Provider
	Cred     llmfleet.Credential
	Item     llmfleet.BatchItem
	// Own is the wait the emulator asks for itself (0: it sends none).
	Own time.Duration
}

// RunPollAfter checks that GetBatch reports a running batch's Retry-After
// as its PollAfter, in seconds and as an HTTP date (and the emulator's
// own, if it sends one), and that an ended batch has none: over loopback
// against the provider's emulator, on a manual clock.
func RunPollAfter(t *testing.T, rig PollAfterRig) {
	type waitCase struct {
		name   string
		header func(now time.Time) string // nil: the emulator's own
		want   time.Duration
	}
	cases := []waitCase{
		{"seconds", func(time.Time) string { return "10" }, 10 * time.Second},
		{"HTTP date", func(now time.Time) string { return now.Add(42 * time.Second).Format(http.TimeFormat) }, 42 * time.Second},
	}
	if rig.Own > 0 {
		cases = append(cases, waitCase{"the emulator's own", nil, rig.Own})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clock := NewManualClock(time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC))
			em := rig.Emulator(clock, c.header == nil)
			next := em
			if c.header != nil {
				next = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.Method == http.MethodGet {
						w.Header().Set("Retry-After", c.header(clock.Now()))
					}
					em.ServeHTTP(w, r)
				})
			}
			srv := httptest.NewServer(next)
			t.Cleanup(srv.Close)
			checkPollAfter(t, rig.Provider(srv.URL, srv.Client(), clock), rig, clock, c.want)
		})
	}
}

// checkPollAfter creates a batch, and reads it running (want) and ended
// (none).
func checkPollAfter(t *testing.T, p llmfleet.Provider, rig PollAfterRig, clock *ManualClock, want time.Duration) {
	t.Helper()
	b, err := p.CreateBatch(t.Context(), rig.Cred, "tag", nil, []llmfleet.BatchItem{rig.Item})
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.GetBatch(t.Context(), rig.Cred, b.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status == llmfleet.BatchEnded || got.PollAfter != want {
		t.Errorf("running batch: status %q, PollAfter %s, want %s", got.Status, got.PollAfter, want)
	}
	clock.Advance(2 * time.Minute)
	got, err = p.GetBatch(t.Context(), rig.Cred, b.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != llmfleet.BatchEnded || got.PollAfter != 0 {
		t.Errorf("ended batch: status %q, PollAfter %s, want none", got.Status, got.PollAfter)
	}
}
