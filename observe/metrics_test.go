package observe

import (
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/pricing"
)

// scrape fetches /metrics from a pipeline's handler over loopback.
func scrape(t *testing.T, p *Pipeline) string {
	t.Helper()
	ts := httptest.NewServer(p.Handler(http.NotFoundHandler()))
	defer ts.Close()
	resp, err := http.Get(ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestMetricsModelLabelBoundedByPriceTable(t *testing.T) {
	p, err := New(Config{Price: pricing.Default().Cost, Provider: "anthropic"})
	if err != nil {
		t.Fatal(err)
	}
	for _, model := range []string{"claude-sonnet-4-6", "random-model-1", "random-model-2", ""} {
		p.Observe(llmfleet.LedgerEntry{Model: model, Route: llmfleet.RouteSync, Outcome: "ok",
			Usage: llmfleet.Usage{InputTokens: 10, OutputTokens: 5}, Latency: 300 * time.Millisecond})
	}
	p.Observe(llmfleet.LedgerEntry{Model: "claude-sonnet-4-6", Route: llmfleet.RouteBatch, Outcome: "ok",
		Usage: llmfleet.Usage{InputTokens: 10, OutputTokens: 5}, Latency: 90 * time.Second})
	p.ObserveTurnaround("anthropic", "made-up", time.Minute)
	body := scrape(t, p)
	for _, want := range []string{
		`llmfleet_requests_total{model="claude-sonnet-4-6",outcome="ok",route="sync"} 1`,
		`llmfleet_requests_total{model="other",outcome="ok",route="sync"} 2`,
		`llmfleet_requests_total{model="unknown",outcome="ok",route="sync"} 1`,
		`llmfleet_batch_turnaround_seconds_count{model="other"} 1`,
		`llmfleet_request_duration_seconds_count{route="sync"} 4`,
		`llmfleet_request_duration_seconds_count{route="batch"} 1`,
		`llmfleet_request_duration_seconds_bucket{route="batch",le="60"} 0`,
		`llmfleet_request_duration_seconds_bucket{route="batch",le="120"} 1`,
		`llmfleet_request_duration_seconds_bucket{route="sync",le="0.5"} 4`,
		`goversion="` + runtime.Version() + `"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("no %s in\n%s", want, body)
		}
	}
	if strings.Contains(body, "random-model") || strings.Contains(body, "made-up") {
		t.Errorf("an unpriced model is a label value:\n%s", body)
	}
	var info string
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, "llmfleet_build_info{") {
			info = line
		}
	}
	if !strings.HasSuffix(info, "} 1") || !strings.Contains(info, `version="`) || !strings.Contains(info, `revision="`) {
		t.Errorf("build info line %q", info)
	}
}
