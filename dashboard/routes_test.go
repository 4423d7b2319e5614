package dashboard

import (
	"strings"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
)

// The traffic series counts the three routes apart: a flex call is not a
// sync one.
func TestTrafficSplitsFlex(t *testing.T) {
	h := &History{}
	for _, r := range []llmfleet.Route{llmfleet.RouteSync, llmfleet.RouteFlex, llmfleet.RouteFlex, llmfleet.RouteBatch} {
		h.Add(ledgerEntry(10*time.Second, r, 1, 1))
	}
	s := h.Snapshot(t0.Add(time.Minute))
	if len(s.Traffic) == 0 || s.Traffic[0].SyncCalls != 1 || s.Traffic[0].FlexCalls != 2 || s.Traffic[0].BatchedCalls != 1 {
		t.Errorf("traffic %+v", s.Traffic)
	}
}

// The page offers the five periods of /llmfleet/v1/stats?period=, draws
// the three routes, sizes its value axes to their labels and says
// "Connecting…" until its first figures (e2e/dashboard.sh checks them in
// a browser).
func TestPageUX(t *testing.T) {
	html, js, css := mustRead(t, "static/index.html"), mustRead(t, "static/app.js"), mustRead(t, "static/app.css")
	for _, p := range []string{"1h", "24h", "7d", "30d", "all"} {
		if !strings.Contains(html, `data-period="`+p+`"`) || !strings.Contains(js, `"`+p+`"`) {
			t.Errorf("no period %s", p)
		}
	}
	for _, want := range []string{`<i class="sw flex"></i>flex`, `<span class="f"></span>`, "<h2>Route split</h2>"} {
		if !strings.Contains(html, want) {
			t.Errorf("index.html lacks %q", want)
		}
	}
	for _, want := range []string{"size: axisSize", `"Connecting…"`, "var(--flex)", `"v1/stats?period=" + period`} {
		if !strings.Contains(js, want) {
			t.Errorf("app.js lacks %q", want)
		}
	}
	if strings.Contains(js, "size: 50") || strings.Contains(js, "size: 40,") {
		t.Errorf("app.js still fixes the width of a value axis")
	}
	if !strings.Contains(css, "--flex:") {
		t.Errorf("app.css has no flex colour")
	}
}
