package proxy_test

import (
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet/proxy"
)

// slowBody is a request body sent in two halves: the proxy's clock moves
// on by delay between them, once the request has arrived (the clock's
// first Now), as if the client were slow to send it.
func slowBody(clock *manualClock, body string, delay time.Duration) io.Reader {
	pr, pw := io.Pipe()
	go func() {
		half := len(body) / 2
		if _, err := io.WriteString(pw, body[:half]); err != nil {
			return
		}
		select {
		case <-clock.arrived:
		case <-time.After(hangGuard):
			pw.CloseWithError(errors.New("the request never arrived"))
			return
		}
		clock.Advance(delay)
		io.WriteString(pw, body[half:])
		pw.Close()
	}()
	return pr
}

// postSlowly posts body to the proxy at base with hdr (pairs), the proxy's
// clock moving on by delay while the body is read.
func postSlowly(t *testing.T, base string, clock *manualClock, body string, delay time.Duration, hdr ...string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/v1/messages", slowBody(clock, body, delay))
	req.ContentLength = int64(len(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Api-Key", "sk-budget")
	req.Header.Set("Anthropic-Version", "2023-06-01")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := (&http.Client{Timeout: hangGuard}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// The batch route hands the Submitter what is left of the budget, counted
// from the request's arrival at the proxy: the time spent reading the body
// is taken off.
func TestBatchBudgetFromArrival(t *testing.T) {
	clock := newManualClock()
	sub := &fakeSubmitter{}
	ts := newProxy(t, &proxy.Server{Submitter: sub, Clock: clock}, nil)
	resp, body := postSlowly(t, ts.URL, clock, simpleBody, 2*time.Second, "llmfleet-latency-budget-ms", "600000")
	if resp.StatusCode != http.StatusOK || resp.Header.Get("llmfleet-route") != "batch" {
		t.Fatalf("%d %v %s", resp.StatusCode, resp.Header, body)
	}
	if len(sub.budgets) != 1 || sub.budgets[0] != 10*time.Minute-2*time.Second {
		t.Fatalf("budgets %v, want [9m58s]", sub.budgets)
	}
}

// A budget spent before the request could be handed on is answered 504
// timeout_error at once on the batch route (streaming or not), without
// reaching the Submitter, and on the sync route under a hard deadline,
// without going upstream. Without one the sync call is sent, late: the
// budget routes, it does not refuse.
func TestBudgetSpentOnArrival(t *testing.T) {
	streamBody := `{"model":"claude-test","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"hi"}]}`
	for _, c := range []struct {
		name, route, body, deadline string
		sent                        bool
	}{
		{"batch", "batch", simpleBody, "", false},
		{"batch stream", "batch", streamBody, "", false},
		{"sync hard", "sync", simpleBody, "hard", false},
		{"sync stream hard", "sync", streamBody, "hard", false},
		{"sync", "sync", simpleBody, "", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			clock := newManualClock()
			sub := &fakeSubmitter{}
			up := newUpstream(t)
			ts := newProxy(t, &proxy.Server{Submitter: sub, Clock: clock}, up)
			hdr := []string{"llmfleet-latency-budget-ms", "1000", "llmfleet-route", c.route}
			if c.deadline != "" {
				hdr = append(hdr, "llmfleet-deadline", c.deadline)
			}
			resp, body := postSlowly(t, ts.URL, clock, c.body, 2*time.Second, hdr...)
			if c.sent {
				if resp.StatusCode != http.StatusOK || len(up.requests()) != 1 {
					t.Fatalf("%d %s; upstream got %d", resp.StatusCode, body, len(up.requests()))
				}
				return
			}
			checkTimeout(t, resp, body)
			if resp.Header.Get("llmfleet-route") != c.route || len(sub.requests()) != 0 || len(up.requests()) != 0 {
				t.Fatalf("route %q; submitter got %d, upstream %d", resp.Header.Get("llmfleet-route"), len(sub.requests()), len(up.requests()))
			}
		})
	}
}
