package proxy_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/emulator"
	"github.com/llmfleet/llmfleet/proxy"
)

// These tests run the sync route's latency budget over loopback, with the
// emulator as upstream. A hanging upstream is the emulator's [slow:10m]
// directive, which, unlike Fault.Delay, reads the body before it waits
// and so ends when the proxy hangs up. Where they wait on real time it is
// only the emulator's retry-after; their bounds (a client timeout, a
// context) only keep a broken proxy from hanging the test.

// hangingBody asks the emulator for an answer in ten minutes.
const hangingBody = `{"model":"claude-test","max_tokens":100,"messages":[{"role":"user","content":"[slow:10m] hi"}]}`

// budgetStack is a proxy in front of an emulator.
type budgetStack struct {
	emu   *emulator.Server
	up    *httptest.Server
	proxy *httptest.Server

	mu        sync.Mutex
	upstreamE []string // kinds given to UpstreamError
	entries   chan llmfleet.LedgerEntry
}

// newBudgetStack serves srv on loopback in front of a new emulator, whose
// handler wrap may wrap (nil: none).
func newBudgetStack(t *testing.T, srv *proxy.Server, wrap func(http.Handler) http.Handler) *budgetStack {
	st := &budgetStack{emu: &emulator.Server{}, entries: make(chan llmfleet.LedgerEntry, 16)}
	var h http.Handler = st.emu
	if wrap != nil {
		h = wrap(h)
	}
	st.up = httptest.NewServer(h)
	t.Cleanup(st.up.Close)
	srv.Upstream, _ = url.Parse(st.up.URL)
	srv.UpstreamError = func(kind string) {
		st.mu.Lock()
		st.upstreamE = append(st.upstreamE, kind)
		st.mu.Unlock()
	}
	srv.Observe = func(e llmfleet.LedgerEntry) { st.entries <- e }
	st.proxy = httptest.NewServer(srv.Handler())
	t.Cleanup(st.proxy.Close)
	return st
}

// calls returns how many POST /v1/messages the emulator got.
func (st *budgetStack) calls() int { return st.emu.Stats().Calls[emulator.EndpointMessages] }

// entry returns the next ledger entry of the sync route. The proxy makes
// it once the upstream's body has ended, which may be a moment after the
// caller has read the last byte; the upstream errors of the call are
// counted by then.
func (st *budgetStack) entry(t *testing.T) llmfleet.LedgerEntry {
	t.Helper()
	select {
	case e := <-st.entries:
		return e
	case <-time.After(hangGuard):
		t.Fatal("no ledger entry")
		return llmfleet.LedgerEntry{}
	}
}

func (st *budgetStack) upstreamErrors() []string {
	st.mu.Lock()
	defer st.mu.Unlock()
	return append([]string(nil), st.upstreamE...)
}

// post sends body to the proxy's path with hdr (pairs), bounded by
// hangGuard, and returns the answer read whole.
func (st *budgetStack) post(t *testing.T, path, body string, hdr ...string) (*http.Response, string) {
	t.Helper()
	resp, b, err := st.request(path, body, hdr...)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

func (st *budgetStack) request(path, body string, hdr ...string) (*http.Response, string, error) {
	req, _ := http.NewRequest("POST", st.proxy.URL+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Api-Key", "sk-budget")
	req.Header.Set("Anthropic-Version", "2023-06-01")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := (&http.Client{Timeout: hangGuard}).Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, string(b), err
}

// The upstream hangs: a call with a budget and a hard deadline is
// answered 504 timeout_error when the budget runs out, however the budget
// was given, instead of when the upstream answers (it would take ten
// minutes). The upstream may bill the call: its usage is estimated.
func TestSyncBudgetHardDeadlineHangingUpstream(t *testing.T) {
	for _, c := range []struct {
		name string
		srv  *proxy.Server
		path string
		hdr  []string
	}{
		{"header", &proxy.Server{}, "/v1/messages", []string{"llmfleet-latency-budget-ms", "1000"}},
		{"prefix", &proxy.Server{}, "/budget/1000/v1/messages", nil},
		{"default", &proxy.Server{DefaultBudget: time.Second}, "/v1/messages", nil},
		// Routing read the body: a Submitter that plans sync.
		{"planned", &proxy.Server{Submitter: &fakeSubmitter{route: llmfleet.RouteSync}}, "/v1/messages", []string{"llmfleet-latency-budget-ms", "1000"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := newBudgetStack(t, c.srv, nil)
			resp, body := st.post(t, c.path, hangingBody, append(c.hdr, "llmfleet-deadline", "hard")...)
			checkTimeout(t, resp, body)
			if resp.Header.Get("llmfleet-route") != "sync" || st.calls() != 1 {
				t.Fatalf("route %q, upstream saw %d calls", resp.Header.Get("llmfleet-route"), st.calls())
			}
			if e := st.entry(t); e.Outcome != "timeout_error" || e.BudgetMet || e.Budget != time.Second ||
				!e.Estimated || e.Usage != llmfleet.EstimatedUsage(int64(len(hangingBody))) || e.Model != "claude-test" {
				t.Fatalf("ledger entry %+v", e)
			}
			if errs := st.upstreamErrors(); len(errs) != 0 {
				t.Fatalf("a spent budget counted as upstream errors %v", errs)
			}
		})
	}
}

// The same through the SDK, which sees an API timeout_error it must not
// retry.
func TestSyncBudgetHardDeadlineHangingUpstreamSDK(t *testing.T) {
	st := newBudgetStack(t, &proxy.Server{}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	client := newClient(st.proxy.URL+"/budget/1000", optHeader("llmfleet-deadline", "hard"))
	_, err := client.Messages.New(ctx, userParams("[slow:10m] hang"))
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusGatewayTimeout || apiErr.Type() != "timeout_error" ||
		apiErr.Response.Header.Get("X-Should-Retry") != "false" {
		t.Fatalf("err %v", err)
	}
}

// Without a budget there is no timeout: the call waits for the upstream.
func TestSyncNoBudgetNoTimeout(t *testing.T) {
	st := newBudgetStack(t, &proxy.Server{}, nil)
	st.emu.InjectFault(emulator.Fault{Endpoint: emulator.EndpointMessages, Delay: 1500 * time.Millisecond})
	resp, body := st.post(t, "/v1/messages", simpleBody)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "Answer to: hi") {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
}

// A 429, 529 or overloaded_error whose retry-after fits in the budget is
// waited out and sent again; anything else is passed back as it came.
func TestSyncBudgetRetries(t *testing.T) {
	for _, c := range []struct {
		name   string
		srv    *proxy.Server
		budget string // llmfleet-latency-budget-ms; "" for none
		fault  emulator.Fault
		status int // the answer the caller gets
		calls  int // the calls the emulator got
	}{
		{"529 within budget", &proxy.Server{}, "10000",
			emulator.Fault{Status: 529, RetryAfter: time.Second}, 200, 2},
		{"529 within budget, planned", &proxy.Server{Submitter: &fakeSubmitter{route: llmfleet.RouteSync}}, "10000",
			emulator.Fault{Status: 529, RetryAfter: time.Second}, 200, 2},
		{"429 retry-after-ms", &proxy.Server{}, "10000",
			emulator.Fault{Status: 429, RetryAfterMs: 50 * time.Millisecond}, 200, 2},
		{"503 overloaded_error", &proxy.Server{}, "10000",
			emulator.Fault{Status: 503, ErrorType: "overloaded_error", RetryAfterMs: 50 * time.Millisecond}, 200, 2},
		{"retry-after as a date", &proxy.Server{}, "10000",
			emulator.Fault{Status: 529, Header: http.Header{"Retry-After": {"date"}}}, 200, 2},
		{"two 529s", &proxy.Server{}, "10000",
			emulator.Fault{Status: 529, RetryAfterMs: 50 * time.Millisecond, Times: 2}, 200, 3},
		{"529 too long for the budget", &proxy.Server{}, "5000",
			emulator.Fault{Status: 529, RetryAfter: 30 * time.Second}, 529, 1},
		{"429 without budget", &proxy.Server{}, "",
			emulator.Fault{Status: 429, RetryAfter: time.Second}, 429, 1},
		{"529 without retry-after", &proxy.Server{}, "10000",
			emulator.Fault{Status: 529}, 529, 1},
		{"529 x-should-retry false", &proxy.Server{}, "10000",
			emulator.Fault{Status: 529, RetryAfterMs: 50 * time.Millisecond, ShouldRetry: "false"}, 529, 1},
		{"500 api_error", &proxy.Server{}, "10000",
			emulator.Fault{Status: 500, RetryAfterMs: 50 * time.Millisecond}, 500, 1},
		{"529 at every try", &proxy.Server{}, "60000",
			emulator.Fault{Status: 529, RetryAfterMs: 10 * time.Millisecond, Times: -1}, 529, 4},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := newBudgetStack(t, c.srv, nil)
			c.fault.Endpoint = emulator.EndpointMessages
			if c.fault.Header.Get("Retry-After") == "date" {
				c.fault.Header.Set("Retry-After", time.Now().Add(2*time.Second).UTC().Format(http.TimeFormat))
			}
			st.emu.InjectFault(c.fault)
			var hdr []string
			if c.budget != "" {
				hdr = []string{"llmfleet-latency-budget-ms", c.budget}
			}
			resp, body := st.post(t, "/v1/messages", simpleBody, hdr...)
			if resp.StatusCode != c.status || st.calls() != c.calls {
				t.Fatalf("%d %s after %d upstream calls; want %d after %d", resp.StatusCode, body, st.calls(), c.status, c.calls)
			}
			// One ledger entry; every error answer an upstream error.
			e := st.entry(t)
			if errs := st.upstreamErrors(); len(errs) != c.calls-1+min(1, c.status/400) || e.Outcome == "ok" != (c.status == http.StatusOK) {
				t.Fatalf("ledger entry %+v, upstream errors %v", e, errs)
			}
			if c.status == http.StatusOK {
				if !strings.Contains(body, "Answer to: hi") {
					t.Fatalf("body %s", body)
				}
				return
			}
			// Passed back as the upstream answered.
			var env envelope
			if err := json.Unmarshal([]byte(body), &env); err != nil || env.Error.Type != c.fault.ErrorType && c.fault.ErrorType != "" ||
				env.RequestID == "" || resp.Header.Get("X-Should-Retry") != c.fault.ShouldRetry {
				t.Fatalf("%v %v %s", err, resp.Header, body)
			}
			if c.fault.RetryAfter > 0 && resp.Header.Get("Retry-After") != strings.TrimSuffix(c.fault.RetryAfter.String(), "s") {
				t.Fatalf("retry-after %q", resp.Header.Get("Retry-After"))
			}
		})
	}
}

// A streaming call is retried too, and gets the upstream's stream.
func TestSyncBudgetRetriesStream(t *testing.T) {
	st := newBudgetStack(t, &proxy.Server{}, nil)
	st.emu.InjectFault(emulator.Fault{Endpoint: emulator.EndpointMessages, Status: 529, RetryAfterMs: 50 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	client := newClient(st.proxy.URL, optHeader("llmfleet-latency-budget-ms", "10000"))
	stream := client.Messages.NewStreaming(ctx, userParams("again"))
	var acc anthropic.Message
	for stream.Next() {
		if err := acc.Accumulate(stream.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if len(acc.Content) != 1 || acc.Content[0].Text != "Answer to: again" || st.calls() != 2 {
		t.Fatalf("%s after %d calls", acc.RawJSON(), st.calls())
	}
}

// pauseAfterFirstFlush holds a response after its first flush (a stream's
// first event) until release is closed.
type pauseAfterFirstFlush struct {
	http.ResponseWriter
	release <-chan struct{}
	flushed bool
}

func (w *pauseAfterFirstFlush) Flush() {
	w.ResponseWriter.(http.Flusher).Flush()
	if !w.flushed {
		w.flushed = true
		<-w.release
	}
}

// A stream whose first event came within the budget is not cut when the
// budget runs out: the budget's timer is on the proxy's Clock, which the
// test moves an hour on while the upstream holds the rest of the stream.
func TestSyncBudgetStreamNotCut(t *testing.T) {
	clock := newManualClock()
	release := make(chan struct{})
	var once sync.Once
	releaseAll := func() { once.Do(func() { close(release) }) }
	defer releaseAll()
	st := newBudgetStack(t, &proxy.Server{Clock: clock}, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h.ServeHTTP(&pauseAfterFirstFlush{ResponseWriter: w, release: release}, r)
		})
	})
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	client := newClient(st.proxy.URL, optHeader("llmfleet-latency-budget-ms", "1000"))
	stream := client.Messages.NewStreaming(ctx, userParams("long story"))
	defer stream.Close()
	var acc anthropic.Message
	if !stream.Next() {
		t.Fatalf("no first event: %v", stream.Err())
	}
	if err := acc.Accumulate(stream.Current()); err != nil {
		t.Fatal(err)
	}
	if got := stream.Current().Type; got != "message_start" {
		t.Fatalf("first event %s", got)
	}
	clock.Advance(time.Hour) // the budget is long spent
	releaseAll()
	for stream.Next() {
		if err := acc.Accumulate(stream.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if len(acc.Content) != 1 || acc.Content[0].Text != "Answer to: long story" || acc.StopReason != "end_turn" {
		t.Fatalf("stream cut: %s", acc.RawJSON())
	}
}

// The hard deadline's timer is the proxy's Clock: the call is cut when
// the clock passes the budget, not before, here while the upstream hangs.
func TestSyncHardDeadlineOnClock(t *testing.T) {
	clock := newManualClock()
	st := newBudgetStack(t, &proxy.Server{Clock: clock}, nil)
	type answer struct {
		resp *http.Response
		body string
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		resp, body, err := st.request("/v1/messages", hangingBody, "llmfleet-latency-budget-ms", "3000", "llmfleet-deadline", "hard")
		done <- answer{resp, body, err}
	}()
	// Once the emulator holds the call, the clock moves to just short of
	// the budget, then past it.
	guard := time.After(hangGuard)
	for st.calls() == 0 {
		select {
		case a := <-done:
			t.Fatalf("answered before the upstream got the call: %v %s", a.err, a.body)
		case <-guard:
			t.Fatal("the call never reached the upstream")
		case <-time.After(5 * time.Millisecond):
		}
	}
	clock.Advance(2999 * time.Millisecond)
	select {
	case a := <-done:
		t.Fatalf("answered before the budget ran out: %v %s", a.err, a.body)
	default:
	}
	clock.Advance(time.Millisecond)
	select {
	case a := <-done:
		if a.err != nil {
			t.Fatal(a.err)
		}
		checkTimeout(t, a.resp, a.body)
	case <-time.After(hangGuard):
		t.Fatal("no answer once the budget ran out")
	}
	if e := st.entry(t); e.Outcome != "timeout_error" || e.BudgetMet || e.Latency != 3*time.Second || !e.Estimated ||
		e.Usage != llmfleet.EstimatedUsage(int64(len(hangingBody))) {
		t.Fatalf("ledger entry %+v", e)
	}
}
