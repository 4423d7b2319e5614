package claude_test

import (
	"math/rand/v2"
	"net/http"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/claude"
	"github.com/llmfleet/llmfleet/emulator"
	"github.com/llmfleet/llmfleet/providertest"
)

// GetBatch reports a running batch's Retry-After as its PollAfter (the
// emulator's own 10 s, as the API sends it, and any other); an ended
// batch has none.
func TestGetBatchPollAfter(t *testing.T) {
	providertest.RunPollAfter(t, providertest.PollAfterRig{
		Emulator: func(clock llmfleet.Clock, own bool) http.Handler {
			em := &emulator.Server{Clock: clock, Turnaround: func(string, *rand.Rand) time.Duration { return time.Minute }}
			if !own {
				em.BatchRetryAfter = -1
			}
			return em
		},
		Provider: func(base string, client *http.Client, clock llmfleet.Clock) llmfleet.Provider {
			return &claude.Provider{BaseURL: base, HTTPClient: client, Clock: clock}
		},
		Cred: emuCred,
		Item: llmfleet.BatchItem{CustomID: "tag-1", Params: []byte(`{"model":"claude-sonnet-4-6","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`)},
		Own:  10 * time.Second,
	})
}
