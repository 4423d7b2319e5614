package proxy_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/emulator"
	"github.com/llmfleet/llmfleet/openaiemu"
	"github.com/llmfleet/llmfleet/proxy"
)

// ledgerTap is a proxy's Observe and UpstreamError, as tests read them.
type ledgerTap struct {
	entries chan llmfleet.LedgerEntry
	mu      sync.Mutex
	kinds   []string
}

func newLedgerTap(srv *proxy.Server) *ledgerTap {
	l := &ledgerTap{entries: make(chan llmfleet.LedgerEntry, 8)}
	srv.Observe = func(e llmfleet.LedgerEntry) { l.entries <- e }
	srv.UpstreamError = func(kind string) {
		l.mu.Lock()
		l.kinds = append(l.kinds, kind)
		l.mu.Unlock()
	}
	return l
}

func (l *ledgerTap) upstreamErrors() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.kinds)
}

// brokenUpstream answers every call with the first part of an answer of
// content type ctype, then breaks the connection off.
func brokenUpstream(t *testing.T, ctype, first string) *url.URL {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", ctype)
		io.WriteString(w, first)
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	}))
	t.Cleanup(up.Close)
	u, _ := url.Parse(up.URL)
	return u
}

// postLeaving sends req from a goroutine of its own; leave cancels it and
// returns once its caller has gone.
func postLeaving(req *http.Request) (leave func()) {
	ctx, cancel := context.WithCancel(req.Context())
	req = req.WithContext(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// An answer the upstream breaks off after its 200 may be billed: every
// face records it with the usage read so far, else an estimate, and
// counts a network error.
func TestBrokenAnswerBilled(t *testing.T) {
	chunk := `data: {"id":"c","object":"chat.completion.chunk","model":"gpt-4.1","choices":[{"index":0,"delta":{"content":"Hi"}}],"usage":null}` + "\n\n"
	start := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-sonnet-4-6\",\"content\":[],\"usage\":{\"input_tokens\":40,\"output_tokens\":1}}}\n\n"
	for _, c := range []struct {
		name, ctype, first, path, body, outcome string
		readIn                                  int64 // the input tokens read off the answer; 0: estimated
	}{
		{"anthropic json", "application/json", `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-6","content":[{"type":"text","text":"Hel`,
			"/v1/messages", `{"model":"claude-sonnet-4-6","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`, "api_error", 0},
		{"anthropic stream", "text/event-stream", start, // its output estimated
			"/v1/messages", `{"model":"claude-sonnet-4-6","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, "api_error", 40},
		{"openai json", "application/json", `{"id":"c","object":"chat.completion","model":"gpt-4.1","choices":[{"index":0,"message":{"role":"assistant","content":"Hel`,
			"/openai/v1/chat/completions", `{"model":"gpt-4.1","messages":[{"role":"user","content":"hi"}]}`, "api_error", 0},
		{"openai stream", "text/event-stream", chunk,
			"/openai/v1/chat/completions", `{"model":"gpt-4.1","stream":true,"messages":[{"role":"user","content":"hi"}]}`, "api_error", 0},
		{"gemini json", "application/json", `{"candidates": [{"content": {"parts": [{"text": "Hel`,
			"/gemini/v1beta/models/gemini-2.5-flash:generateContent", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`, "network", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			up := brokenUpstream(t, c.ctype, c.first)
			srv := &proxy.Server{Upstream: up, OpenAIUpstream: up, GeminiUpstream: up}
			l := newLedgerTap(srv)
			ps := httptest.NewServer(srv.Handler())
			defer ps.Close()
			req, _ := http.NewRequest("POST", ps.URL+c.path, strings.NewReader(c.body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer sk-x")
			req.Header.Set("X-Api-Key", "sk-x")
			req.Header.Set("X-Goog-Api-Key", "k-x")
			req.Header.Set("llmfleet-route", "sync")
			if resp, err := http.DefaultClient.Do(req); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			e := oneEntry(t, l.entries)
			if e.Outcome != c.outcome || e.Usage.InputTokens == 0 || e.Estimated != (c.readIn == 0 || c.name == "anthropic stream") ||
				c.readIn != 0 && e.Usage.InputTokens != c.readIn {
				t.Fatalf("entry %+v, want %s with %d input tokens read (0: estimated)", e, c.outcome, c.readIn)
			}
			if kinds := l.upstreamErrors(); !slices.Contains(kinds, "network") {
				t.Fatalf("upstream errors %v, want a network one", kinds)
			}
		})
	}
}

// A call cut while llmfleet waits out an upstream error's retry-after, by
// its caller leaving or by the upstream timeout, had nothing in flight:
// its only answer was a 529, which is not billed, so its entry has no
// usage, and none estimated.
func TestCutWhileWaitingNotBilled(t *testing.T) {
	t.Run("caller leaves", func(t *testing.T) {
		st := newBudgetStack(t, &proxy.Server{}, nil)
		st.emu.InjectFault(emulator.Fault{Endpoint: emulator.EndpointMessages, Status: 529, RetryAfter: time.Minute})
		req, _ := http.NewRequest("POST", st.proxy.URL+"/v1/messages", strings.NewReader(simpleBody))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Api-Key", "sk-budget")
		req.Header.Set("llmfleet-latency-budget-ms", "600000")
		leave := postLeaving(req)
		// The 529 is counted before the wait begins.
		for deadline := time.Now().Add(hangGuard); len(st.upstreamErrors()) == 0; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the 529 never came")
			}
		}
		leave()
		if e := st.entry(t); e.Outcome != "caller_canceled" || e.Estimated || e.Usage != (llmfleet.Usage{}) || st.calls() != 1 {
			t.Fatalf("entry %+v after %d upstream calls", e, st.calls())
		}
	})
	t.Run("upstream timeout", func(t *testing.T) {
		st := newBudgetStack(t, &proxy.Server{UpstreamTimeout: 3 * time.Second}, nil)
		st.emu.InjectFault(emulator.Fault{Endpoint: emulator.EndpointMessages, Status: 529, RetryAfter: time.Minute})
		resp, _ := st.post(t, "/v1/messages", simpleBody, "llmfleet-latency-budget-ms", "600000")
		if e := st.entry(t); resp.StatusCode != http.StatusGatewayTimeout || e.Outcome != "timeout_error" || e.Estimated ||
			e.Usage != (llmfleet.Usage{}) || st.calls() != 1 {
			t.Fatalf("%d; entry %+v after %d upstream calls", resp.StatusCode, e, st.calls())
		}
	})
}

// flexProxy serves an OpenAI face with Submitter sub in front of up and
// returns its ledger and a flex call to it, with a long budget.
func flexProxy(t *testing.T, sub llmfleet.Submitter, up *url.URL) (*ledgerTap, *http.Request) {
	srv := &proxy.Server{Submitter: sub, OpenAIUpstream: up}
	l := newLedgerTap(srv)
	ps := httptest.NewServer(srv.Handler())
	t.Cleanup(ps.Close)
	req, _ := http.NewRequest("POST", ps.URL+"/openai/v1/chat/completions", strings.NewReader(flexChatBody))
	req.Header.Set("Authorization", "Bearer sk-x")
	req.Header.Set("llmfleet-latency-budget-ms", "600000")
	return l, req
}

// shedThenHold is a Submitter that routes every call flex and whose flex
// executor, after one attempt the upstream sheds, waits until the call
// ends, as the engine's waits out its backoff.
type shedThenHold struct {
	*fakeSubmitter
	shed chan struct{}
}

func (x shedThenHold) ExecuteFlex(ctx context.Context, _, _ string, _ time.Time, _ time.Duration, attempt func(context.Context) error) (bool, error) {
	err := attempt(ctx)
	close(x.shed)
	<-ctx.Done()
	if err == nil {
		return true, nil
	}
	return false, ctx.Err()
}

// A flex call whose caller leaves while the engine waits between sheds
// had nothing in flight: the shed was not billed, nor is the call.
func TestFlexCutBetweenShedsNotBilled(t *testing.T) {
	emu := &openaiemu.Server{FlexUnavailable: func(string) bool { return true }}
	up := httptest.NewServer(emu)
	defer up.Close()
	u, _ := url.Parse(up.URL)
	x := shedThenHold{&fakeSubmitter{route: llmfleet.RouteFlex}, make(chan struct{})}
	l, req := flexProxy(t, x, u)
	leave := postLeaving(req)
	<-x.shed
	leave()
	if e := oneEntry(t, l.entries); e.Outcome != "caller_canceled" || e.Estimated || e.Usage != (llmfleet.Usage{}) {
		t.Fatalf("entry %+v", e)
	}
	if billed := emu.Stats().Billed; len(billed) != 0 {
		t.Fatalf("the emulator billed %v", billed)
	}
}

// giveUpWhenHeld is a Submitter that routes every call flex and whose
// flex executor gives an attempt up for the standard tier once the
// upstream holds it, as the engine's does with an attempt too slow for
// its budget.
type giveUpWhenHeld struct {
	*fakeSubmitter
	held <-chan struct{}
}

func (x giveUpWhenHeld) ExecuteFlex(ctx context.Context, _, _ string, _ time.Time, _ time.Duration, attempt func(context.Context) error) (bool, error) {
	actx, cancel := context.WithCancel(ctx)
	go func() {
		<-x.held
		cancel()
	}()
	err := attempt(actx)
	cancel()
	if err != nil && ctx.Err() == nil {
		return false, nil // given up: the standard tier
	}
	return err == nil, err
}

// A flex attempt given up for the standard tier after it went upstream
// may be billed: it is in the ledger as a rescue's part paid and not
// delivered, its usage estimated, and the standard call that answers is
// the rescue's.
func TestFlexGivenUpIsRescue(t *testing.T) {
	emu := &openaiemu.Server{}
	held := make(chan struct{})
	var once sync.Once
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if strings.Contains(string(b), `"service_tier":"flex"`) {
			once.Do(func() { close(held) })
			<-r.Context().Done()
			return
		}
		r.Body = io.NopCloser(strings.NewReader(string(b)))
		emu.ServeHTTP(w, r)
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	l, req := flexProxy(t, giveUpWhenHeld{&fakeSubmitter{route: llmfleet.RouteFlex}, held}, u)
	resp, body, err := doRead(http.DefaultClient, req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%v %v %s", err, resp, body)
	}
	given, answered := oneEntry(t, l.entries), oneEntry(t, l.entries)
	if given.Rescue != llmfleet.RescueLate || given.Route != llmfleet.RouteFlex || given.Tier != llmfleet.TierFlex ||
		!given.Estimated || given.Usage.InputTokens == 0 || !given.BudgetMet {
		t.Fatalf("the attempt given up: %+v", given)
	}
	if answered.Rescue != llmfleet.RescueSync || answered.Outcome != "ok" || answered.Tier != llmfleet.TierStandard || answered.Estimated {
		t.Fatalf("the standard call: %+v", answered)
	}
}
