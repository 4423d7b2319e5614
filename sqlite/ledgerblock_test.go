package sqlite

import (
	"reflect"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
)

// TestLedgerBlockRoundTrip: every field of an entry survives a block.
func TestLedgerBlockRoundTrip(t *testing.T) {
	e := llmfleet.LedgerEntry{
		RequestID: "lfr_1", Time: time.Unix(1700000000, 123).UTC(), BatchID: "msgbatch_1",
		Provider: "openai", Model: "o4-mini", Route: llmfleet.RouteFlex, Outcome: "ok",
		CostUSD: 0.125, OtherRouteUSD: -1.5e-9, Priced: true, Queued: -1, Turnaround: 2, Latency: 3,
		Budget: time.Hour, BudgetMet: true, Rescue: llmfleet.RescueLate, Client: "alice", Tier: llmfleet.TierStandard,
	}
	e.Usage = llmfleet.Usage{InputTokens: 1, OutputTokens: 2, CacheCreationInputTokens: 3, CacheReadInputTokens: 4}
	e.Usage.CacheCreation.Ephemeral5mInputTokens, e.Usage.CacheCreation.Ephemeral1hInputTokens = 5, 6
	in := []llmfleet.LedgerEntry{e, {Time: time.Unix(0, 0).UTC()}}
	var out []llmfleet.LedgerEntry
	if err := decodeBlock(appendBlock(nil, in), func(e llmfleet.LedgerEntry) { out = append(out, e) }); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", out, in)
	}
}

// FuzzLedgerBlock: decoding never panics, and what decodes encodes back
// to the same bytes.
func FuzzLedgerBlock(f *testing.F) {
	f.Add(appendBlock(nil, []llmfleet.LedgerEntry{{Provider: "anthropic", Model: "m", CostUSD: 1}}))
	f.Add([]byte{blockVersion})
	f.Add([]byte{blockVersion, 0x80})
	f.Fuzz(func(t *testing.T, data []byte) {
		var got []llmfleet.LedgerEntry
		if err := decodeBlock(data, func(e llmfleet.LedgerEntry) { got = append(got, e) }); err != nil {
			return
		}
		var again []llmfleet.LedgerEntry
		if err := decodeBlock(appendBlock(nil, got), func(e llmfleet.LedgerEntry) { again = append(again, e) }); err != nil {
			t.Fatalf("re-encoded block does not decode: %v", err)
		}
		if len(got) != len(again) {
			t.Fatalf("%d entries, %d after a round trip", len(got), len(again))
		}
		for i := range got {
			if !got[i].Time.Equal(again[i].Time) {
				t.Fatalf("entry %d time %v, %v after a round trip", i, got[i].Time, again[i].Time)
			}
		}
	})
}
