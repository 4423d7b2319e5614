package proxy_test

import (
	"sync"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/openaiemu"
)

// TestOpenAIBackgroundResponseLedgered: a background response (a
// /v1/responses call with background: true) is answered queued, with no
// usage, and billed when it ends. It used to be ledgered as the queued
// answer showed it: $0, whatever it cost (and past a client's spend
// limit). Its entry is now handed on when its end is read through the
// proxy (the SDK's Get, as a poll), once however often it is read: its
// usage, its client, the response's id. With and without proxy-held keys.
func TestOpenAIBackgroundResponseLedgered(t *testing.T) {
	for _, held := range []bool{false, true} {
		var mu sync.Mutex
		var entries []llmfleet.LedgerEntry
		observe := func(e llmfleet.LedgerEntry) {
			mu.Lock()
			entries = append(entries, e)
			mu.Unlock()
		}
		emu := &openaiemu.Server{}
		base, key := openAIFace(t, emu, observe)+"/openai/v1", "sk-client"
		if held {
			base, key = heldOpenAIFace(t, emu, true, observe), "alice-key"
		}
		c, ctx := sdk(base, key), t.Context()
		p := askResponse("think about it at length", "")
		p.Background = openai.Bool(true)
		r, err := c.Responses.New(ctx, p, option.WithHeader("llmfleet-route", "sync"))
		if err != nil || r.Status != responses.ResponseStatusQueued {
			t.Fatalf("held %v: the background call: %v, %+v", held, err, r)
		}
		mu.Lock()
		if len(entries) != 0 {
			t.Errorf("held %v: the queued answer was ledgered: %+v", held, entries)
		}
		mu.Unlock()
		for range 3 { // polled until done, and after
			got, err := c.Responses.Get(ctx, r.ID, responses.ResponseGetParams{})
			if err != nil || got.Status != responses.ResponseStatusCompleted {
				t.Fatalf("held %v: reading it: %v, %+v", held, err, got)
			}
		}
		mu.Lock()
		if len(entries) != 1 || entries[0].RequestID != r.ID || entries[0].Usage.OutputTokens == 0 || entries[0].Usage.InputTokens == 0 ||
			entries[0].Route != llmfleet.RouteSync || entries[0].Client == "" {
			t.Errorf("held %v: entries %+v, want one of its usage, its id and client", held, entries)
		}
		mu.Unlock()
	}
}
