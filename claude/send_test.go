package claude

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/claudewire"
)

const okMessage = `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-6",` +
	`"content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","stop_sequence":null,` +
	`"usage":{"input_tokens":12,"cache_creation_input_tokens":3,"cache_read_input_tokens":4,"output_tokens":6}}`

func TestSendHeadersAndBody(t *testing.T) {
	body := []byte("{ \"model\":\"m\" ,\n\"max_tokens\":5, \"unknown_field\": [1,2,{}],\"messages\":[]}")
	var got http.Header
	var gotBody []byte
	var gotPath string
	p, _ := newTest(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		gotPath = r.URL.Path
		gotBody, _ = io.ReadAll(r.Body)
		w.Header().Set("Request-Id", "req_1")
		io.WriteString(w, okMessage)
	}))
	p.BaseURL += "/prefix/"
	hdr := http.Header{}
	hdr.Add("anthropic-beta", "a-1")
	hdr.Add("anthropic-beta", "b-2")
	hdr.Set("Anthropic-Workspace-Id", "ws")
	hdr.Set("llmfleet-budget", "5s")
	hdr.Set("Llmfleet-Provider", "x")
	hdr.Set("X-Api-Key", "sk-from-header")
	hdr.Set("User-Agent-Extra", "nope")
	resp, err := p.Send(context.Background(), &llmfleet.Request{Credential: testCred, Header: hdr, Body: body})
	if err != nil {
		t.Fatal(err)
	}
	if gotPath != "/prefix/v1/messages" {
		t.Errorf("path %q", gotPath)
	}
	if !bytes.Equal(gotBody, body) {
		t.Errorf("body changed: %q", gotBody)
	}
	if got.Get("X-Api-Key") != testCred.APIKey || got.Get("Authorization") != "" {
		t.Errorf("credential headers: %v", got)
	}
	if v := got.Values("Anthropic-Beta"); len(v) != 2 || v[0] != "a-1" || v[1] != "b-2" {
		t.Errorf("anthropic-beta %q", v)
	}
	if got.Get("Anthropic-Version") != DefaultVersion || got.Get("Anthropic-Workspace-Id") != "ws" {
		t.Errorf("anthropic headers: %v", got)
	}
	if got.Get("Content-Type") != "application/json" {
		t.Errorf("content-type %q", got.Get("Content-Type"))
	}
	for k := range got {
		if strings.HasPrefix(strings.ToLower(k), "llmfleet-") || k == "User-Agent-Extra" {
			t.Errorf("header %s passed through", k)
		}
	}
	if resp.Route != llmfleet.RouteSync || resp.StatusCode != 200 || resp.Header.Get("Request-Id") != "req_1" {
		t.Errorf("response %+v", resp)
	}
	if string(resp.Body) != okMessage || resp.Model != "claude-sonnet-4-6" {
		t.Errorf("body/model %q %q", resp.Body, resp.Model)
	}
	if u := resp.Usage; u.InputTokens != 12 || u.OutputTokens != 6 || u.CacheCreationInputTokens != 3 || u.CacheReadInputTokens != 4 {
		t.Errorf("usage %+v", u)
	}
}

func TestSendBearerAndVersion(t *testing.T) {
	var got http.Header
	p, _ := newTest(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		io.WriteString(w, okMessage)
	}))
	p.Version = "2024-01-01"
	cred := llmfleet.Credential{AuthToken: "tok-SECRET"}
	if _, err := p.Send(context.Background(), &llmfleet.Request{Credential: cred, Body: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if got.Get("Authorization") != "Bearer tok-SECRET" || got.Get("X-Api-Key") != "" || got.Get("Anthropic-Version") != "2024-01-01" {
		t.Errorf("headers %v", got)
	}
	hdr := http.Header{"Anthropic-Version": {"2023-01-01"}}
	if _, err := p.Send(context.Background(), &llmfleet.Request{Credential: cred, Header: hdr, Body: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if v := got.Values("Anthropic-Version"); len(v) != 1 || v[0] != "2023-01-01" {
		t.Errorf("caller's anthropic-version not used: %q", v)
	}
}

func TestSendLocalErrors(t *testing.T) {
	p, _ := newTest(t, http.NotFoundHandler())
	_, err := p.Send(context.Background(), &llmfleet.Request{Body: []byte(`{}`)})
	var e *llmfleet.Error
	if !errors.As(err, &e) || e.StatusCode != 401 || e.Type != "authentication_error" {
		t.Errorf("no credential: %v", err)
	}
	_, err = p.Send(context.Background(), &llmfleet.Request{Credential: testCred})
	if !errors.As(err, &e) || e.StatusCode != 400 || e.Type != "invalid_request_error" {
		t.Errorf("empty body: %v", err)
	}
}

func TestSendErrorEnvelope(t *testing.T) {
	var calls atomic.Int32
	p, sl := newTest(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Retry-After", "7")
		writeError(w, 400, "invalid_request_error", "max_tokens: required")
	}))
	_, err := p.Send(context.Background(), &llmfleet.Request{Credential: testCred, Body: []byte(`{}`)})
	var e *llmfleet.Error
	if !errors.As(err, &e) {
		t.Fatalf("err %T %v", err, err)
	}
	if e.StatusCode != 400 || e.Type != "invalid_request_error" || e.Message != "max_tokens: required" ||
		e.RequestID != "req_body" || e.RetryAfter != 7*time.Second || !bytes.Contains(e.Body, []byte(`"request_id":"req_body"`)) {
		t.Errorf("error %+v", e)
	}
	if calls.Load() != 1 || len(sl.Slept()) != 0 {
		t.Errorf("400 retried: %d calls", calls.Load())
	}
}

func TestSendErrorWithoutEnvelope(t *testing.T) {
	p, _ := newTest(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Request-Id", "req_h")
		w.WriteHeader(413)
		io.WriteString(w, "<html>too large</html>")
	}))
	_, err := p.Send(context.Background(), &llmfleet.Request{Credential: testCred, Body: []byte(`{}`)})
	var e *llmfleet.Error
	if !errors.As(err, &e) || e.StatusCode != 413 || e.Type != "request_too_large" || e.RequestID != "req_h" || e.Message == "" {
		t.Errorf("error %+v", err)
	}
}

func TestSendRetries(t *testing.T) {
	httpDate := testNow.Add(3 * time.Second).Format(http.TimeFormat)
	for _, tc := range []struct {
		name       string
		status     int
		header     map[string]string
		maxRetries int
		wantCalls  int
		wantDelay  time.Duration // of the first retry; 0: backoff
	}{
		{name: "529 retried", status: 529, wantCalls: 3},
		{name: "500", status: 500, wantCalls: 3},
		{name: "429 retry-after-ms", status: 429, header: map[string]string{"Retry-After-Ms": "1500", "Retry-After": "9"}, wantCalls: 3, wantDelay: 1500 * time.Millisecond},
		{name: "429 retry-after seconds", status: 429, header: map[string]string{"Retry-After": "9"}, wantCalls: 3, wantDelay: 9 * time.Second},
		{name: "503 retry-after date", status: 503, header: map[string]string{"Retry-After": httpDate}, wantCalls: 3, wantDelay: 3 * time.Second},
		{name: "408", status: 408, wantCalls: 3},
		{name: "409", status: 409, wantCalls: 3},
		{name: "x-should-retry false", status: 500, header: map[string]string{"X-Should-Retry": "false"}, wantCalls: 1},
		{name: "x-should-retry true", status: 400, header: map[string]string{"X-Should-Retry": "true"}, wantCalls: 3},
		{name: "403 not retried", status: 403, wantCalls: 1},
		{name: "max retries 5", status: 529, maxRetries: 5, wantCalls: 6},
		{name: "no retries", status: 529, maxRetries: -1, wantCalls: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int32
			p, sl := newTest(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				for k, v := range tc.header {
					w.Header().Set(k, v)
				}
				writeError(w, tc.status, claudewire.TypeForStatus(tc.status), "nope")
			}))
			p.MaxRetries = tc.maxRetries
			_, err := p.Send(context.Background(), &llmfleet.Request{Credential: testCred, Body: []byte(`{}`)})
			var e *llmfleet.Error
			if !errors.As(err, &e) || e.StatusCode != tc.status {
				t.Fatalf("err %v", err)
			}
			if int(calls.Load()) != tc.wantCalls {
				t.Errorf("%d calls, want %d", calls.Load(), tc.wantCalls)
			}
			ds := sl.Slept()
			if len(ds) != tc.wantCalls-1 {
				t.Fatalf("%d sleeps", len(ds))
			}
			for i, d := range ds {
				want := tc.wantDelay
				if want != 0 {
					if d != want {
						t.Errorf("delay %d = %v, want %v", i, d, want)
					}
					continue
				}
				base := min(500*time.Millisecond<<i, 8*time.Second)
				if d > base || d < base*3/4 {
					t.Errorf("delay %d = %v, want within [%v, %v]", i, d, base*3/4, base)
				}
			}
		})
	}
}

func TestRetryThenSuccess(t *testing.T) {
	var calls atomic.Int32
	var buf bytes.Buffer
	p, _ := newTest(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			writeError(w, 529, "overloaded_error", "Overloaded")
			return
		}
		io.WriteString(w, okMessage)
	}))
	p.Logger = slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	resp, err := p.Send(context.Background(), &llmfleet.Request{Credential: testCred, Body: []byte(`{}`)})
	if err != nil || resp.StatusCode != 200 || calls.Load() != 2 {
		t.Fatalf("resp %v err %v calls %d", resp, err, calls.Load())
	}
	if !strings.Contains(buf.String(), testCred.String()) {
		t.Errorf("log lacks the fingerprint: %s", buf.String())
	}
	if strings.Contains(buf.String(), "SECRETKEY") {
		t.Errorf("key logged: %s", buf.String())
	}
}

func TestSendNotRetriedAfterWrite(t *testing.T) {
	var calls atomic.Int32
	p, sl := newTest(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		drop(w, r)
	}))
	_, err := p.Send(context.Background(), &llmfleet.Request{Credential: testCred, Body: []byte(`{}`)})
	var ue *llmfleet.UncertainError
	if !errors.As(err, &ue) || ue.Answered {
		t.Fatalf("err %v", err)
	}
	if calls.Load() != 1 || len(sl.Slept()) != 0 {
		t.Errorf("retried a written Send: %d calls", calls.Load())
	}
	if strings.Contains(err.Error(), "SECRETKEY") {
		t.Errorf("key in error: %v", err)
	}
}

func TestSendBodyCutNotRetried(t *testing.T) {
	var calls atomic.Int32
	p, _ := newTest(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Length", "1000")
		io.WriteString(w, `{"id":"msg`)
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	}))
	_, err := p.Send(context.Background(), &llmfleet.Request{Credential: testCred, Body: []byte(`{}`)})
	if err == nil || calls.Load() != 1 {
		t.Fatalf("err %v, %d calls", err, calls.Load())
	}
}

// failingDials makes the first n dials fail, so nothing is written.
func failingDials(n int32) *http.Client {
	var dials atomic.Int32
	tr := &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if dials.Add(1) <= n {
				return nil, errors.New("connection refused (test)")
			}
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		},
	}
	return &http.Client{Transport: tr}
}

func TestSendRetriedBeforeWrite(t *testing.T) {
	var calls atomic.Int32
	p, sl := newTest(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		io.WriteString(w, okMessage)
	}))
	p.HTTPClient = failingDials(2)
	resp, err := p.Send(context.Background(), &llmfleet.Request{Credential: testCred, Body: []byte(`{}`)})
	if err != nil || resp.StatusCode != 200 {
		t.Fatal(err)
	}
	if calls.Load() != 1 || len(sl.Slept()) != 2 {
		t.Errorf("%d calls, %d sleeps", calls.Load(), len(sl.Slept()))
	}

	p.HTTPClient = failingDials(3)
	_, err = p.Send(context.Background(), &llmfleet.Request{Credential: testCred, Body: []byte(`{}`)})
	var ue *llmfleet.UncertainError
	if !errors.Is(err, llmfleet.ErrNotDelivered) || errors.As(err, &ue) {
		t.Errorf("after 3 failed dials: %v", err)
	}
}

func TestContextEndsBackoff(t *testing.T) {
	p, _ := newTest(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "3600")
		writeError(w, 429, "rate_limit_error", "slow down")
	}))
	p.Clock = nil // the real clock; the context ends the wait
	ctx, cancel := context.WithCancel(context.Background())
	p.Logger = slog.New(cancelHandler{cancel})
	_, err := p.Send(ctx, &llmfleet.Request{Credential: testCred, Body: []byte(`{}`)})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err %v", err)
	}
}

// cancelHandler cancels a context when a record is logged.
type cancelHandler struct{ cancel func() }

func (h cancelHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h cancelHandler) Handle(context.Context, slog.Record) error {
	h.cancel()
	return nil
}
func (h cancelHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h cancelHandler) WithGroup(string) slog.Handler      { return h }

func TestStream(t *testing.T) {
	var calls atomic.Int32
	p, _ := newTest(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			writeError(w, 529, "overloaded_error", "Overloaded")
			return
		}
		if r.Header.Get("Accept") != "text/event-stream" {
			t.Errorf("accept %q", r.Header.Get("Accept"))
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, exampleStream)
	}))
	rc, err := p.Stream(context.Background(), &llmfleet.Request{Credential: testCred, Body: []byte(`{"stream":true}`)})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil || string(b) != exampleStream {
		t.Errorf("stream %q %v", b, err)
	}

	p2, _ := newTest(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, 401, "authentication_error", "invalid x-api-key")
	}))
	_, err = p2.Stream(context.Background(), &llmfleet.Request{Credential: testCred, Body: []byte(`{"stream":true}`)})
	var e *llmfleet.Error
	if !errors.As(err, &e) || e.StatusCode != 401 || e.Type != "authentication_error" {
		t.Errorf("err %v", err)
	}
}

func TestDefaults(t *testing.T) {
	var p Provider
	if p.Name() != "anthropic" {
		t.Error(p.Name())
	}
	if l := p.Limits(); l.MaxRequests != 100_000 || l.MaxBytes != 256_000_000 {
		t.Errorf("limits %+v", l)
	}
	if p.httpClient() == nil || p.httpClient() != p.httpClient() || p.url("/v1/x") != "https://api.anthropic.com/v1/x" {
		t.Error("defaults")
	}
	if p.maxRetries() != 2 || p.version() != "2023-06-01" {
		t.Error("defaults")
	}
	p.MaxRetries = -1
	if p.maxRetries() != 0 {
		t.Error("negative MaxRetries")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, okMessage) }))
	defer srv.Close()
	q := &Provider{BaseURL: srv.URL}
	if _, err := q.Send(context.Background(), &llmfleet.Request{Credential: testCred, Body: []byte(`{}`)}); err != nil {
		t.Error(err)
	}
}
