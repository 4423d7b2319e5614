package proxy_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/emulator"
	"github.com/llmfleet/llmfleet/proxy"
)

// accessProxy serves a proxy in front of the emulator whose Access hook
// sends its records to the returned channel.
func accessProxy(t *testing.T, sub llmfleet.Submitter) (*emulator.Server, string, chan proxy.Access) {
	t.Helper()
	emu := &emulator.Server{}
	emuTS := httptest.NewServer(emu)
	t.Cleanup(emuTS.Close)
	u, _ := url.Parse(emuTS.URL)
	got := make(chan proxy.Access, 16)
	srv := &proxy.Server{
		Upstream:    u,
		Submitter:   sub,
		Observe:     func(llmfleet.LedgerEntry) {},
		Fingerprint: func(c llmfleet.Credential) string { return "label-of-" + c.APIKey[len(c.APIKey)-1:] },
		Access:      func(a proxy.Access) { got <- a },
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return emu, ts.URL, got
}

// oneAccess returns the single access record of a request.
func oneAccess(t *testing.T, got chan proxy.Access) proxy.Access {
	t.Helper()
	var a proxy.Access
	select {
	case a = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("no access record")
	}
	select {
	case b := <-got:
		t.Fatalf("a second access record: %+v", b)
	default:
	}
	return a
}

const accessBody = `{"model":"claude-sonnet-4-6","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`

func TestAccessSyncRoute(t *testing.T) {
	_, base, got := accessProxy(t, &fakeSubmitter{route: llmfleet.RouteSync})
	resp := post(t, base+"/v1/messages", accessBody)
	readAll(t, resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	a := oneAccess(t, got)
	if a.Method != "POST" || a.Path != "/v1/messages" || !a.Messages || a.Route != llmfleet.RouteSync ||
		a.Model != "claude-sonnet-4-6" || a.Status != 200 || a.Latency <= 0 || a.Budget != 0 ||
		a.RequestID == "" || a.RequestID != resp.Header.Get("Request-Id") || a.Key != "label-of-a" {
		t.Fatalf("access %+v", a)
	}
}

func TestAccessBatchRoute(t *testing.T) {
	_, base, got := accessProxy(t, &fakeSubmitter{route: llmfleet.RouteBatch})
	resp := post(t, base+"/budget/600000/v1/messages", accessBody)
	readAll(t, resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	a := oneAccess(t, got)
	if a.Path != "/budget/600000/v1/messages" || !a.Messages || a.Route != llmfleet.RouteBatch ||
		a.Model != "claude-sonnet-4-6" || a.Status != 200 || a.Budget != 10*time.Minute ||
		a.RequestID == "" || a.RequestID != resp.Header.Get(proxy.HeaderRequestID) || a.Key != "label-of-a" {
		t.Fatalf("access %+v", a)
	}
}

func TestAccessSyncUpstreamError(t *testing.T) {
	emu, base, got := accessProxy(t, nil)
	emu.InjectFault(emulator.Fault{Endpoint: emulator.EndpointMessages, Status: 500, Times: 1})
	resp := post(t, base+"/v1/messages", accessBody, proxy.HeaderBudget, "60000")
	readAll(t, resp.Body)
	if resp.StatusCode != 500 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	a := oneAccess(t, got)
	if a.Route != llmfleet.RouteSync || a.Status != 500 || a.Model != "claude-sonnet-4-6" ||
		a.Budget != time.Minute || a.RequestID == "" {
		t.Fatalf("access %+v", a)
	}
}

func TestAccessPassThroughAndHealth(t *testing.T) {
	_, base, got := accessProxy(t, nil)
	req, _ := http.NewRequest("GET", base+"/v1/messages/batches", nil)
	req.Header.Set("X-Api-Key", "sk-test-b")
	req.Header.Set("Anthropic-Version", "2023-06-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp.Body)
	resp.Body.Close()
	a := oneAccess(t, got)
	if a.Method != "GET" || a.Path != "/v1/messages/batches" || a.Messages || a.Status != resp.StatusCode ||
		a.Latency <= 0 || a.Key != "label-of-b" {
		t.Fatalf("access %+v", a)
	}
	resp, err = http.Get(base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	select {
	case a := <-got:
		t.Fatalf("health check logged: %+v", a)
	default:
	}
}
