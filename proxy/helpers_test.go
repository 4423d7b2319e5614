package proxy_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/proxy"
)

// fakeSubmitter is a Submitter whose Plan answers route and whose batches
// are answered by reply.
type fakeSubmitter struct {
	route llmfleet.Route
	reply func(ctx context.Context, req *llmfleet.Request) (*llmfleet.Response, error)

	mu      sync.Mutex
	reqs    []*llmfleet.Request
	budgets []time.Duration
	plans   int
}

func (f *fakeSubmitter) Submit(ctx context.Context, budget time.Duration, req *llmfleet.Request) (*llmfleet.Response, error) {
	panic("Submit not used by the proxy")
}

func (f *fakeSubmitter) SubmitSync(ctx context.Context, req *llmfleet.Request) (*llmfleet.Response, error) {
	panic("SubmitSync not used by the proxy")
}

func (f *fakeSubmitter) SubmitBatch(ctx context.Context, budget time.Duration, req *llmfleet.Request) (*llmfleet.Response, error) {
	f.mu.Lock()
	f.reqs = append(f.reqs, req)
	f.budgets = append(f.budgets, budget)
	f.mu.Unlock()
	if f.reply != nil {
		return f.reply(ctx, req)
	}
	return &llmfleet.Response{Route: llmfleet.RouteBatch, StatusCode: 200, Body: testMessage(req.Body), BatchID: "msgbatch_test"}, nil
}

func (f *fakeSubmitter) Plan(budget time.Duration, req *llmfleet.Request) llmfleet.Route {
	f.mu.Lock()
	f.plans++
	f.mu.Unlock()
	if f.route == "" {
		return llmfleet.RouteBatch
	}
	return f.route
}

func (f *fakeSubmitter) Stats() llmfleet.Stats { return llmfleet.Stats{} }

func (f *fakeSubmitter) requests() []*llmfleet.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*llmfleet.Request(nil), f.reqs...)
}

// lastUserText returns the text of the last user message of a body.
func lastUserText(body []byte) string {
	var b struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	json.Unmarshal(body, &b)
	for i := len(b.Messages) - 1; i >= 0; i-- {
		if b.Messages[i].Role != "user" {
			continue
		}
		var s string
		if json.Unmarshal(b.Messages[i].Content, &s) == nil {
			return s
		}
		var blocks []struct{ Type, Text string }
		json.Unmarshal(b.Messages[i].Content, &blocks)
		for _, bl := range blocks {
			if bl.Type == "text" {
				s += bl.Text
			}
		}
		return s
	}
	return ""
}

// testMessage is a Message answering body.
func testMessage(body []byte) []byte {
	text, _ := json.Marshal("Answer to: " + lastUserText(body))
	return []byte(`{"id":"msg_01test","type":"message","role":"assistant","model":"claude-test",` +
		`"content":[{"type":"text","text":` + string(text) + `,"citations":null}],` +
		`"stop_reason":"end_turn","stop_sequence":null,` +
		`"usage":{"input_tokens":12,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,` +
		`"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":0},"output_tokens":6,"service_tier":"batch"}}`)
}

// upstream is a recording stand-in for the Anthropic API.
type upstream struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []recorded
}

type recorded struct {
	method, path string
	header       http.Header
	body         []byte
}

func newUpstream(t *testing.T) *upstream {
	u := &upstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		u.reqs = append(u.reqs, recorded{r.Method, r.URL.RequestURI(), r.Header.Clone(), body})
		u.mu.Unlock()
		w.Header().Set("Request-Id", "req_upstream")
		if r.URL.Path != "/v1/messages" {
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]string{"path": r.URL.Path, "method": r.Method})
			return
		}
		if strings.Contains(string(body), `"stream":true`) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.Write([]byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_sync\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-test\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n"))
			w.(http.Flusher).Flush()
			w.Write([]byte("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
				"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"sync answer\"}}\n\n" +
				"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
				"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":3}}\n\n" +
				"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":"msg_sync","type":"message","role":"assistant","model":"claude-test","content":[{"type":"text","text":"sync answer"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":3}}`))
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *upstream) requests() []recorded {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]recorded(nil), u.reqs...)
}

// newProxy serves srv on loopback, with u as its upstream.
func newProxy(t *testing.T, srv *proxy.Server, u *upstream) *httptest.Server {
	if u != nil {
		srv.Upstream, _ = url.Parse(u.URL)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return ts
}

// newClient is an SDK client of base, with no retries.
func newClient(base string, opts ...option.RequestOption) anthropic.Client {
	return anthropic.NewClient(append([]option.RequestOption{
		option.WithBaseURL(base), option.WithAPIKey("sk-test-a"), option.WithMaxRetries(0),
	}, opts...)...)
}

func userParams(text string) anthropic.MessageNewParams {
	return anthropic.MessageNewParams{
		Model:     "claude-test",
		MaxTokens: 100,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(text))},
	}
}

// post sends a raw request to the proxy.
func post(t *testing.T, url, body string, hdr ...string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Api-Key", "sk-test-a")
	req.Header.Set("Anthropic-Version", "2023-06-01")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func readAll(t *testing.T, r io.Reader) string {
	t.Helper()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// sameJSON reports whether a and b hold the same JSON value.
func sameJSON(t *testing.T, a, b string) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal([]byte(a), &x); err != nil {
		t.Fatalf("%v in %s", err, a)
	}
	if err := json.Unmarshal([]byte(b), &y); err != nil {
		t.Fatalf("%v in %s", err, b)
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return string(xb) == string(yb)
}

// leftOf reports whether d, the budget a Submitter was given, is what was
// left of budget once the proxy had read the request: at most budget, and
// not much less (the bound is generous: nothing here takes a minute).
func leftOf(budget, d time.Duration) bool { return d <= budget && d > budget-time.Minute }

const simpleBody = `{"model":"claude-test","max_tokens":100,"messages":[{"role":"user","content":"hi"}]}`

func optResponse(r **http.Response) option.RequestOption { return option.WithResponseInto(r) }
func optHeader(k, v string) option.RequestOption         { return option.WithHeader(k, v) }
func optAPIKey(k string) option.RequestOption            { return option.WithAPIKey(k) }

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// hangGuard bounds a test's calls: it ends only a test that would hang.
const hangGuard = 2 * time.Minute

// envelope is the API's error body.
type envelope struct {
	Type  string `json:"type"`
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
	RequestID string `json:"request_id"`
}

// checkTimeout checks that resp, body is the proxy's 504 for a spent
// budget: timeout_error in the envelope, x-should-retry: false.
func checkTimeout(t *testing.T, resp *http.Response, body string) {
	t.Helper()
	var env envelope
	if err := json.Unmarshal([]byte(body), &env); err != nil {
		t.Fatalf("%v in %s", err, body)
	}
	if resp.StatusCode != http.StatusGatewayTimeout || env.Type != "error" || env.Error.Type != "timeout_error" ||
		env.Error.Message == "" || env.RequestID == "" || resp.Header.Get("Request-Id") != env.RequestID ||
		resp.Header.Get("X-Should-Retry") != "false" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("%d %v %s, want 504 timeout_error", resp.StatusCode, resp.Header, body)
	}
}

// manualClock is an llmfleet.Clock that moves only when told to. Its
// first Now closes arrived once it has read the time.
type manualClock struct {
	mu      sync.Mutex
	now     time.Time
	timers  []*manualTimer
	arrived chan struct{}
	once    sync.Once
}

type manualTimer struct {
	c  *manualClock
	at time.Time
	f  func()
}

func newManualClock() *manualClock {
	return &manualClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), arrived: make(chan struct{})}
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	now := c.now
	c.mu.Unlock()
	c.once.Do(func() { close(c.arrived) })
	return now
}

func (c *manualClock) AfterFunc(d time.Duration, f func()) llmfleet.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &manualTimer{c: c, at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return t
}

func (t *manualTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	for i, x := range t.c.timers {
		if x == t {
			t.c.timers = append(t.c.timers[:i], t.c.timers[i+1:]...)
			return true
		}
	}
	return false
}

// Advance moves the clock on by d and runs the timers that came due.
func (c *manualClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []*manualTimer
	kept := c.timers[:0]
	for _, t := range c.timers {
		if !t.at.After(c.now) {
			due = append(due, t)
		} else {
			kept = append(kept, t)
		}
	}
	c.timers = kept
	c.mu.Unlock()
	for _, t := range due {
		t.f()
	}
}
