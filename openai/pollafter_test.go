package openai_test

import (
	"net/http"
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
	providertest.RunPollAfter(t, providertest.PollAfterRig{
		Emulator: func(clock llmfleet.Clock, _ bool) http.Handler {
			return &openaiemu.Server{Clock: clock, BatchTurnaround: time.Minute}
		},
		Provider: func(base string, client *http.Client, clock llmfleet.Clock) llmfleet.Provider {
			return &openai.Provider{BaseURL: base, HTTPClient: client, Clock: clock}
		},
		Cred: llmfleet.Credential{APIKey: "sk-test"},
		Item: llmfleet.BatchItem{CustomID: "tag-1", Params: []byte(`{"model":"gpt-4.1","messages":[{"role":"user","content":"hi"}]}`)},
	})
}
