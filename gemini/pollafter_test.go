package gemini_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/gemini"
	"github.com/llmfleet/llmfleet/geminiemu"
	"github.com/llmfleet/llmfleet/providertest"
)

// GetBatch reports a Retry-After on a running batch's answer as its
// PollAfter, in seconds and as an HTTP date; an ended batch has none.
func TestGetBatchPollAfter(t *testing.T) {
	providertest.RunPollAfter(t, providertest.PollAfterRig{
		Emulator: func(clock llmfleet.Clock, _ bool) http.Handler {
			return &geminiemu.Server{Clock: clock, Keys: []string{"k"}, BatchTurnaround: time.Minute}
		},
		Provider: func(base string, client *http.Client, clock llmfleet.Clock) llmfleet.Provider {
			return &gemini.Provider{BaseURL: base, HTTPClient: client, Clock: clock}
		},
		Cred: llmfleet.Credential{APIKey: "k"},
		Item: llmfleet.BatchItem{CustomID: "tag-1", Endpoint: "/v1beta/models/gemini-2.5-flash:generateContent", Params: []byte(body)},
	})
}
