package proxy_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/middleware/openaimw"
	"github.com/llmfleet/llmfleet/openaiemu"
	"github.com/llmfleet/llmfleet/openaiwire"
	"github.com/llmfleet/llmfleet/proxy"
)

// The OpenAI face's sync and flex calls over loopback, the emulator
// holding each call for a while on the proxy's manualClock (its Fault
// hook), so that nothing waits on real time.

// slowOpenAI serves srv on loopback in front of an OpenAI emulator that
// holds every call for delay on clock; held gets a value as each hold
// begins. Its ledger entries go to the channel returned.
func slowOpenAI(t *testing.T, srv *proxy.Server, clock *manualClock, delay time.Duration) (string, <-chan struct{}, <-chan llmfleet.LedgerEntry) {
	t.Helper()
	held, quit := make(chan struct{}, 4), make(chan struct{})
	emu := &openaiemu.Server{Fault: func(string) (int, string) {
		done := make(chan struct{})
		clock.AfterFunc(delay, func() { close(done) })
		held <- struct{}{}
		select {
		case <-done:
		case <-quit: // the test is over
		}
		return 0, ""
	}}
	up := httptest.NewServer(emu)
	t.Cleanup(up.Close)
	t.Cleanup(func() { close(quit) }) // before up.Close, which waits for the calls held
	entries := make(chan llmfleet.LedgerEntry, 4)
	srv.OpenAIUpstream, _ = url.Parse(up.URL)
	srv.Clock = clock
	srv.Observe = func(e llmfleet.LedgerEntry) { entries <- e }
	ps := httptest.NewServer(srv.Handler())
	t.Cleanup(ps.Close)
	return ps.URL, held, entries
}

const flexChatBody = `{"model":"o4-mini","messages":[{"role":"user","content":"hi"}]}`

// postHeldOpenAI posts flexChatBody to the face in a goroutine, with hdr (pairs),
// and returns once the emulator holds it.
func postHeldOpenAI(t *testing.T, base string, held <-chan struct{}, hdr ...string) <-chan syncAnswer {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/openai/v1/chat/completions", strings.NewReader(flexChatBody))
	req.Header.Set("Authorization", "Bearer sk-openai")
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return sendHeld(t, held, func() (*http.Response, string, error) { return doRead(http.DefaultClient, req) })
}

func oneEntry(t *testing.T, entries <-chan llmfleet.LedgerEntry) llmfleet.LedgerEntry {
	t.Helper()
	select {
	case e := <-entries:
		return e
	case <-time.After(hangGuard):
		t.Fatal("no ledger entry")
		return llmfleet.LedgerEntry{}
	}
}

// A sync or flex call of the OpenAI face whose upstream answers after its
// budget is answered, late; with llmfleet-deadline: hard it is cut at the
// budget, 504 timeout_error in OpenAI's envelope, its usage estimated.
func TestOpenAIFaceBudgetLateOrHard(t *testing.T) {
	for _, c := range []struct {
		route llmfleet.Route
		hard  bool
	}{{llmfleet.RouteSync, false}, {llmfleet.RouteFlex, false}, {llmfleet.RouteSync, true}, {llmfleet.RouteFlex, true}} {
		t.Run(string(c.route)+map[bool]string{true: " hard"}[c.hard], func(t *testing.T) {
			clock := newManualClock()
			base, held, entries := slowOpenAI(t, &proxy.Server{}, clock, 10*time.Second)
			hdr := []string{"llmfleet-route", string(c.route), "llmfleet-latency-budget-ms", "3000"}
			if c.hard {
				hdr = append(hdr, "llmfleet-deadline", "hard")
			}
			done := postHeldOpenAI(t, base, held, hdr...)
			clock.Advance(3 * time.Second)
			if !c.hard {
				notAnswered(t, done, "when the budget ran out")
				clock.Advance(7 * time.Second)
			}
			a := awaitAnswer(t, done)
			e := oneEntry(t, entries)
			if e.Route != c.route || e.BudgetMet || e.Budget != 3*time.Second {
				t.Fatalf("ledger entry %+v", e)
			}
			if c.hard {
				var env struct{ Error openaiwire.APIError }
				if err := json.Unmarshal([]byte(a.body), &env); err != nil || a.resp.StatusCode != http.StatusGatewayTimeout ||
					env.Error.Type != "timeout_error" || !strings.Contains(env.Error.Message, "3000 ms") {
					t.Fatalf("%v %d %s", err, a.resp.StatusCode, a.body)
				}
				if e.Outcome != "timeout_error" || !e.Estimated || e.Usage != llmfleet.EstimatedUsage(int64(len(flexChatBody))) {
					t.Fatalf("ledger entry %+v", e)
				}
				return
			}
			ans, err := openaiwire.ReadAnswer([]byte(a.body))
			if err != nil || a.resp.StatusCode != http.StatusOK || a.resp.Header.Get("llmfleet-route") != string(c.route) {
				t.Fatalf("%v %d %v %s", err, a.resp.StatusCode, a.resp.Header, a.body)
			}
			if e.Outcome != "ok" || e.Estimated || e.Usage != ans.Usage || e.Usage.OutputTokens == 0 || e.Latency != 10*time.Second {
				t.Fatalf("ledger entry %+v, want the usage answered %+v", e, ans.Usage)
			}
			if c.route == llmfleet.RouteFlex && e.Tier != llmfleet.TierFlex {
				t.Fatalf("flex entry's tier %q", e.Tier)
			}
		})
	}
}

// The upstream timeout cuts an OpenAI call the upstream has not answered
// by then, with no budget: 504 timeout_error naming --upstream-timeout.
func TestOpenAIFaceUpstreamTimeout(t *testing.T) {
	clock := newManualClock()
	base, held, entries := slowOpenAI(t, &proxy.Server{UpstreamTimeout: time.Minute}, clock, time.Hour)
	done := postHeldOpenAI(t, base, held)
	clock.Advance(59 * time.Second)
	notAnswered(t, done, "before the upstream timeout")
	clock.Advance(time.Second)
	a := awaitAnswer(t, done)
	if a.resp.StatusCode != http.StatusGatewayTimeout || !strings.Contains(a.body, `"timeout_error"`) || !strings.Contains(a.body, "--upstream-timeout") {
		t.Fatalf("%d %s", a.resp.StatusCode, a.body)
	}
	if e := oneEntry(t, entries); e.Outcome != "timeout_error" || !e.Estimated || e.Usage.InputTokens == 0 {
		t.Fatalf("ledger entry %+v", e)
	}
}

// A malformed llmfleet-deadline is a 400 in OpenAI's envelope, naming the
// header, on the face and in its middleware.
func TestOpenAIFaceMalformedDeadline(t *testing.T) {
	base, _, _ := slowOpenAI(t, &proxy.Server{}, newManualClock(), 0)
	c := sdk(base+"/openai/v1", "sk-a")
	_, err := c.Chat.Completions.New(context.Background(), ask("hi"), option.WithHeader("llmfleet-deadline", "later"))
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest || apiErr.Param != "llmfleet-deadline" {
		t.Fatalf("face: %v", err)
	}
	srv := &proxy.Server{}
	mw := openai.NewClient(option.WithBaseURL(base+"/openai/v1"), option.WithAPIKey("sk-a"), option.WithMaxRetries(0),
		option.WithMiddleware(openaimw.New(srv)))
	_, err = mw.Chat.Completions.New(context.Background(), ask("hi"), option.WithHeader("llmfleet-deadline", "later"))
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest || apiErr.Param != "llmfleet-deadline" {
		t.Fatalf("middleware: %v", err)
	}
}

// A caller that leaves while the upstream holds its sync or flex call
// leaves a ledger entry: caller_canceled, its usage estimated.
func TestOpenAIFaceCallerLeavesIsRecorded(t *testing.T) {
	for _, route := range []llmfleet.Route{llmfleet.RouteSync, llmfleet.RouteFlex} {
		base, held, entries := slowOpenAI(t, &proxy.Server{}, newManualClock(), time.Hour)
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, "POST", base+"/openai/v1/chat/completions", strings.NewReader(flexChatBody))
		req.Header.Set("Authorization", "Bearer sk-openai")
		req.Header.Set("llmfleet-route", string(route))
		req.Header.Set("llmfleet-latency-budget-ms", "3000")
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
			t.Fatalf("%s: err %v", route, err)
		}
		if e := oneEntry(t, entries); e.Route != route || e.Outcome != "caller_canceled" || !e.Estimated ||
			e.Usage != llmfleet.EstimatedUsage(int64(len(flexChatBody))) || e.BudgetMet {
			t.Fatalf("%s: ledger entry %+v", route, e)
		}
	}
}

// The OpenAI SDK middleware cuts a call at its budget only with
// llmfleet-deadline: hard: 504 timeout_error, in process.
func TestOpenAIMiddlewareHardDeadline(t *testing.T) {
	clock := newManualClock()
	face := &proxy.Server{}
	_, held, _ := slowOpenAI(t, face, clock, time.Hour)
	srv := &proxy.Server{Clock: clock}
	c := openai.NewClient(option.WithBaseURL(face.OpenAIUpstream.String()+"/v1"), option.WithAPIKey("sk-a"),
		option.WithMaxRetries(0), option.WithMiddleware(openaimw.New(srv)))
	errc := make(chan error, 1)
	go func() {
		ctx := llmfleet.WithBudget(context.Background(), 3*time.Second)
		_, err := c.Chat.Completions.New(ctx, ask("hi"), option.WithHeader("llmfleet-deadline", "hard"))
		errc <- err
	}()
	<-held
	clock.Advance(3 * time.Second)
	var apiErr *openai.Error
	select {
	case err := <-errc:
		if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusGatewayTimeout || apiErr.Type != "timeout_error" {
			t.Fatalf("err %v", err)
		}
	case <-time.After(hangGuard):
		t.Fatal("not cut at the budget")
	}
}
