package ledger

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
)

func TestSummaryByClient(t *testing.T) {
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	entries := []llmfleet.LedgerEntry{
		{Time: at, Model: "m", Route: llmfleet.RouteBatch, Outcome: "ok", Priced: true, CostUSD: 1, OtherRouteUSD: 2, Client: "alice"},
		{Time: at, Model: "m", Route: llmfleet.RouteSync, Outcome: "ok", Priced: true, CostUSD: 3, OtherRouteUSD: 1.5, Client: "alice"},
		{Time: at, Model: "m", Route: llmfleet.RouteBatch, Outcome: "ok", Priced: true, CostUSD: 0.5, OtherRouteUSD: 1, Client: "cred_0123"},
		{Time: at, Model: "m", Route: llmfleet.RouteSync, Outcome: "ok", Priced: true, CostUSD: 0.25, OtherRouteUSD: 0.125},
	}
	s := Summarize(entries, time.Time{}, time.Time{})
	want := map[string]struct {
		calls             int64
		paid, would, save float64
	}{
		"alice":     {2, 4, 5, 1},
		"cred_0123": {1, 0.5, 1, 0.5},
		NoClient:    {1, 0.25, 0.25, 0},
	}
	if len(s.ByClient) != len(want) {
		t.Fatalf("ByClient %v, want %d clients", s.ByClient, len(want))
	}
	for c, w := range want {
		b := s.ByClient[c]
		if b.Calls != w.calls || b.CostUSD != w.paid || b.SyncEquivalentUSD != w.would || b.SavedUSD != w.save {
			t.Errorf("%s: %+v, want %+v", c, b, w)
		}
	}
	js, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		ByClient map[string]struct {
			Calls    int64   `json:"calls"`
			CostUSD  float64 `json:"cost_usd"`
			SyncEq   float64 `json:"sync_equivalent_usd"`
			SavedUSD float64 `json:"saved_usd"`
		} `json:"by_client"`
	}
	if err := json.Unmarshal(js, &back); err != nil || back.ByClient["alice"].SavedUSD != 1 {
		t.Fatalf("by_client in JSON: %s (%v)", js, err)
	}
	var buf bytes.Buffer
	if err := WriteTable(&buf, s); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, line := range []string{"CLIENT", "alice", "cred_0123", NoClient} {
		if !strings.Contains(out, line) {
			t.Errorf("table lacks %q:\n%s", line, out)
		}
	}
}

func TestTotalsByClientEmpty(t *testing.T) {
	var tt Totals
	if s := tt.Summary(); s.ByClient == nil {
		t.Error("ByClient is nil: it must serve as {}")
	}
}
