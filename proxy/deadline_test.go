package proxy_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/middleware/anthropicmw"
	"github.com/llmfleet/llmfleet/proxy"
)

// These tests run the Anthropic face's sync route over loopback with the
// emulator as upstream, the emulator's [slow:] waits and the proxy's
// timers on one manualClock: nothing waits on real time but the loopback
// round trips.

// lateBody asks the emulator for an answer in ten seconds.
const lateBody = `{"model":"claude-test","max_tokens":100,"messages":[{"role":"user","content":"[slow:10s] hi"}]}`

// onClock makes the emulator's [slow:] waits wait on clock; the channel
// it returns gets a value as each wait begins (its timer set).
func (st *budgetStack) onClock(clock *manualClock) <-chan time.Duration {
	held := make(chan time.Duration, 4)
	st.emu.Clock = heldClock{clock: clock, held: held}
	return held
}

// heldClock is the emulator's clock in onClock: the real time, its waits
// on clock, each told on held as it begins.
type heldClock struct {
	llmfleet.RealClock
	clock *manualClock
	held  chan time.Duration
}

func (c heldClock) Sleep(ctx context.Context, d time.Duration) error {
	done := make(chan struct{})
	timer := c.clock.AfterFunc(d, func() { close(done) })
	c.held <- d
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		timer.Stop()
		return ctx.Err()
	}
}

type syncAnswer struct {
	resp *http.Response
	body string
	err  error
}

// send posts body in a goroutine and returns once the emulator holds it.
func (st *budgetStack) send(t *testing.T, held <-chan time.Duration, body string, hdr ...string) <-chan syncAnswer {
	t.Helper()
	return sendHeld(t, held, func() (*http.Response, string, error) { return st.request("/v1/messages", body, hdr...) })
}

// sendHeld runs send in a goroutine and returns once held tells that the
// upstream holds the call (an answer first fails the test).
func sendHeld[T any](t *testing.T, held <-chan T, send func() (*http.Response, string, error)) <-chan syncAnswer {
	t.Helper()
	done := make(chan syncAnswer, 1)
	go func() {
		resp, b, err := send()
		done <- syncAnswer{resp, b, err}
	}()
	select {
	case <-held:
	case a := <-done:
		t.Fatalf("answered before the upstream held the call: %v %s", a.err, a.body)
	case <-time.After(hangGuard):
		t.Fatal("the call never reached the upstream")
	}
	return done
}

// doRead sends req with c and reads its answer's body.
func doRead(c *http.Client, req *http.Request) (*http.Response, string, error) {
	resp, err := c.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, string(b), err
}

func awaitAnswer(t *testing.T, done <-chan syncAnswer) syncAnswer {
	t.Helper()
	select {
	case a := <-done:
		if a.err != nil {
			t.Fatal(a.err)
		}
		return a
	case <-time.After(hangGuard):
		t.Fatal("no answer")
		return syncAnswer{}
	}
}

func notAnswered(t *testing.T, done <-chan syncAnswer, when string) {
	t.Helper()
	select {
	case a := <-done:
		t.Fatalf("answered %s: %v %d %s", when, a.err, a.resp.StatusCode, a.body)
	default:
	}
}

// A budgeted sync call whose upstream answers after the budget gets its
// answer, late: the budget routes, it does not cut a call already sent.
// Its ledger entry has the usage the upstream sent and misses its budget.
func TestSyncBudgetAnsweredLate(t *testing.T) {
	clock := newManualClock()
	st := newBudgetStack(t, &proxy.Server{Clock: clock}, nil)
	done := st.send(t, st.onClock(clock), lateBody, "llmfleet-latency-budget-ms", "3000")
	clock.Advance(3 * time.Second)
	notAnswered(t, done, "when the budget ran out")
	clock.Advance(7 * time.Second)
	a := awaitAnswer(t, done)
	var msg struct {
		Usage llmfleet.Usage `json:"usage"`
	}
	if err := json.Unmarshal([]byte(a.body), &msg); err != nil || a.resp.StatusCode != http.StatusOK ||
		a.resp.Header.Get("llmfleet-route") != "sync" || !strings.Contains(a.body, "Answer to:") || msg.Usage.OutputTokens == 0 {
		t.Fatalf("%v %d %v %s", err, a.resp.StatusCode, a.resp.Header, a.body)
	}
	e := st.entry(t)
	if e.Outcome != "ok" || e.BudgetMet || e.Budget != 3*time.Second || e.Latency != 10*time.Second ||
		e.Usage != msg.Usage || e.Estimated || e.Route != llmfleet.RouteSync {
		t.Fatalf("ledger entry %+v, want the upstream's usage %+v", e, msg.Usage)
	}
	if errs := st.upstreamErrors(); len(errs) != 0 {
		t.Fatalf("upstream errors %v", errs)
	}
}

// The upstream timeout cuts a call the upstream has not answered by then,
// whatever its budget (none here): 504 timeout_error naming
// --upstream-timeout, its ledger entry estimated.
func TestUpstreamTimeoutCutsHungCall(t *testing.T) {
	clock := newManualClock()
	st := newBudgetStack(t, &proxy.Server{Clock: clock, UpstreamTimeout: time.Minute}, nil)
	done := st.send(t, st.onClock(clock), hangingBody)
	clock.Advance(59 * time.Second)
	notAnswered(t, done, "before the upstream timeout")
	clock.Advance(time.Second)
	a := awaitAnswer(t, done)
	var env envelope
	if err := json.Unmarshal([]byte(a.body), &env); err != nil || a.resp.StatusCode != http.StatusGatewayTimeout ||
		env.Error.Type != "timeout_error" || !strings.Contains(env.Error.Message, "--upstream-timeout") ||
		!strings.Contains(env.Error.Message, "1m0s") || a.resp.Header.Get("llmfleet-route") != "sync" {
		t.Fatalf("%v %d %v %s", err, a.resp.StatusCode, a.resp.Header, a.body)
	}
	if e := st.entry(t); e.Outcome != "timeout_error" || e.BudgetMet || !e.Estimated ||
		e.Usage != llmfleet.EstimatedUsage(int64(len(hangingBody))) {
		t.Fatalf("ledger entry %+v", e)
	}
}

// A caller that leaves while the upstream holds its call leaves a ledger
// entry: caller_canceled, its usage estimated (the upstream may bill the
// call), with a budget or without (the body then streams through).
func TestSyncCallerLeavesIsRecorded(t *testing.T) {
	for _, hdr := range [][]string{nil, {"llmfleet-latency-budget-ms", "3000"}} {
		clock := newManualClock()
		st := newBudgetStack(t, &proxy.Server{Clock: clock}, nil)
		held := st.onClock(clock)
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, "POST", st.proxy.URL+"/v1/messages", strings.NewReader(lateBody))
		req.Header.Set("X-Api-Key", "sk-budget")
		req.Header.Set("Anthropic-Version", "2023-06-01")
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		errc := make(chan error, 1)
		go func() {
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				resp.Body.Close()
			}
			errc <- err
		}()
		<-held
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Fatalf("err %v", err)
		}
		if e := st.entry(t); e.Outcome != "caller_canceled" || e.BudgetMet || !e.Estimated ||
			e.Usage != llmfleet.EstimatedUsage(int64(len(lateBody))) || e.Model != "claude-test" && hdr != nil {
			t.Fatalf("budget %v: ledger entry %+v", hdr, e)
		}
	}
}

// llmfleet-deadline takes "hard" only: anything else is a 400 in the
// face's envelope naming the value, on the proxy and in the middleware.
func TestMalformedDeadlineHeader(t *testing.T) {
	st := newBudgetStack(t, &proxy.Server{}, nil)
	resp, body := st.post(t, "/v1/messages", simpleBody, "llmfleet-latency-budget-ms", "3000", "llmfleet-deadline", "soft")
	var env envelope
	if err := json.Unmarshal([]byte(body), &env); err != nil || resp.StatusCode != http.StatusBadRequest ||
		env.Error.Type != "invalid_request_error" || !strings.Contains(env.Error.Message, `"hard"`) || st.calls() != 0 {
		t.Fatalf("%v %d %s; upstream saw %d calls", err, resp.StatusCode, body, st.calls())
	}

	srv := &proxy.Server{}
	client := anthropic.NewClient(option.WithBaseURL(st.up.URL), option.WithAPIKey("sk-mw"), option.WithMaxRetries(0),
		option.WithMiddleware(anthropicmw.New(srv)))
	_, err := client.Messages.New(context.Background(), userParams("hi"), option.WithHeader("llmfleet-deadline", "HARD"))
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest || !strings.Contains(apiErr.Error(), "llmfleet-deadline") {
		t.Fatalf("middleware: %v", err)
	}
}

// The SDK middleware's sync route is not cut by its budget: the call is
// answered late; with llmfleet-deadline: hard it is answered 504 at the
// budget, in process.
func TestMiddlewareSyncDeadline(t *testing.T) {
	for _, hard := range []bool{false, true} {
		clock := newManualClock()
		st := newBudgetStack(t, &proxy.Server{}, nil)
		held := st.onClock(clock)
		srv := &proxy.Server{Clock: clock}
		client := anthropic.NewClient(option.WithBaseURL(st.up.URL), option.WithAPIKey("sk-mw"), option.WithMaxRetries(0),
			option.WithMiddleware(anthropicmw.New(srv)))
		opts := []option.RequestOption{}
		if hard {
			opts = append(opts, option.WithHeader("llmfleet-deadline", "hard"))
		}
		type result struct {
			msg *anthropic.Message
			err error
		}
		done := make(chan result, 1)
		go func() {
			ctx := llmfleet.WithBudget(context.Background(), 3*time.Second)
			msg, err := client.Messages.New(ctx, userParams("[slow:10s] hi"), opts...)
			done <- result{msg, err}
		}()
		<-held
		clock.Advance(3 * time.Second)
		if !hard {
			select {
			case r := <-done:
				t.Fatalf("cut at the budget: %v", r.err)
			default:
			}
			clock.Advance(7 * time.Second)
		}
		var r result
		select {
		case r = <-done:
		case <-time.After(hangGuard):
			t.Fatal("no answer")
		}
		var apiErr *anthropic.Error
		switch {
		case !hard && (r.err != nil || r.msg.Content[0].Text != "Answer to: [slow:10s] hi"):
			t.Fatalf("late answer: %v", r.err)
		case hard && (!errors.As(r.err, &apiErr) || apiErr.StatusCode != http.StatusGatewayTimeout || apiErr.Type() != "timeout_error"):
			t.Fatalf("hard deadline: %v", r.err)
		}
	}
}

// llmfleet-deadline, like every llmfleet-* header, does not go upstream;
// a hard deadline the upstream answers within changes nothing.
func TestDeadlineHeaderNotSentUpstream(t *testing.T) {
	up := newUpstream(t)
	ts := newProxy(t, &proxy.Server{}, up)
	resp := post(t, ts.URL+"/v1/messages", simpleBody, "llmfleet-latency-budget-ms", "600000", "llmfleet-deadline", "hard")
	body := readAll(t, resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "sync answer") {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if rs := up.requests(); len(rs) != 1 || rs[0].header.Get("Llmfleet-Deadline") != "" {
		t.Fatalf("upstream got %+v", rs)
	}
}
