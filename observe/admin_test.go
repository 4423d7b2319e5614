package observe

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/dispatch"
)

// TestPerRequestFieldsForAdminOnly checks over loopback that the stats and
// the dashboard snapshot show request and batch ids only to a caller
// presenting the admin key (either header), and aggregates to anyone else,
// without refusing them.
func TestPerRequestFieldsForAdminOnly(t *testing.T) {
	for _, admin := range []string{"", "admin-secret"} {
		p, err := New(Config{Price: testPrice, Clock: fixedClock{testNow}, Provider: "anthropic", AdminKey: admin,
			InFlight: func() []dispatch.FlightInfo {
				return []dispatch.FlightInfo{{ID: "msgbatch_inflight", Provider: "anthropic", Models: []string{"m"}, Requests: 3, Submitted: testNow}}
			}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close(context.Background()) })
		p.Observe(llmfleet.LedgerEntry{Time: testNow.Add(-time.Minute), Model: "m", Route: llmfleet.RouteBatch, Outcome: "ok",
			RequestID: "lfr_alices", BatchID: "msgbatch_alices", Budget: time.Second, Latency: time.Minute,
			Usage: llmfleet.Usage{InputTokens: 10}})
		ts := httptest.NewServer(p.Handler(http.NotFoundHandler()))
		t.Cleanup(ts.Close)

		fetch := func(path, header, value string) string {
			t.Helper()
			req, _ := http.NewRequest("GET", ts.URL+path, nil)
			if header != "" {
				req.Header.Set(header, value)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 200 {
				t.Fatalf("%s: %d %s", path, resp.StatusCode, b)
			}
			return string(b)
		}
		callers := []struct {
			header, value string
			admin         bool
		}{
			{"", "", false},
			{"X-Api-Key", "wrong", false},
			{"Authorization", "Bearer wrong", false},
			{"X-Api-Key", "admin-secret", admin != ""},
			{"Authorization", "Bearer admin-secret", admin != ""},
		}
		for _, c := range callers {
			stats := fetch("/llmfleet/v1/stats", c.header, c.value)
			snap := fetch("/llmfleet/v1/dashboard", c.header, c.value)
			if !strings.Contains(stats, `"budget_misses":1`) || !strings.Contains(stats, `"batched_calls":1`) {
				t.Fatalf("admin %q, %s %q: aggregates missing: %s", admin, c.header, c.value, stats)
			}
			if !strings.Contains(snap, `"size":3`) {
				t.Fatalf("admin %q, %s %q: batch in flight missing: %s", admin, c.header, c.value, snap)
			}
			shown := strings.Contains(stats, "lfr_alices") && strings.Contains(stats, "msgbatch_alices")
			hidden := !strings.Contains(stats, "lfr_alices") && !strings.Contains(stats, "msgbatch_alices") &&
				strings.Contains(stats, `"recent_budget_misses":[]`)
			if c.admin && !shown || !c.admin && !hidden {
				t.Errorf("admin %q, %s %q: stats %s", admin, c.header, c.value, stats)
			}
			if strings.Contains(snap, "msgbatch_inflight") != c.admin {
				t.Errorf("admin %q, %s %q: snapshot %s", admin, c.header, c.value, snap)
			}
		}
	}
}
