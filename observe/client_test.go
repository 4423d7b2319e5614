package observe

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
)

// /llmfleet/v1/stats breaks cost and savings down by client, for the
// running totals and for a period read from the store.
func TestHandlerStatsByClient(t *testing.T) {
	st := &memStore{}
	p := newTestPipeline(t, st)
	p.Observe(llmfleet.LedgerEntry{Time: testNow.Add(-time.Minute), Model: "m", Route: llmfleet.RouteBatch, Outcome: "ok", Client: "alice"})
	p.Observe(llmfleet.LedgerEntry{Time: testNow.Add(-time.Minute), Model: "m", Route: llmfleet.RouteSync, Outcome: "ok", Client: "bob"})
	p.Observe(llmfleet.LedgerEntry{Time: testNow.Add(-time.Minute), Model: "m", Route: llmfleet.RouteSync, Outcome: "ok", Client: "bob"})
	h := p.Handler(http.NotFoundHandler())
	for _, target := range []string{"/llmfleet/v1/stats", "/llmfleet/v1/stats?since=1h"} {
		code, _, body := get(t, h, target)
		var s struct {
			ByClient map[string]struct {
				Calls int64 `json:"calls"`
			} `json:"by_client"`
		}
		if err := json.Unmarshal([]byte(body), &s); code != 200 || err != nil {
			t.Fatalf("%s: %d %v %s", target, code, err, body)
		}
		if s.ByClient["alice"].Calls != 1 || s.ByClient["bob"].Calls != 2 {
			t.Errorf("%s: by_client %+v, want alice 1, bob 2", target, s.ByClient)
		}
	}
}
