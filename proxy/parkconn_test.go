package proxy_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/claude"
	"github.com/llmfleet/llmfleet/dispatch"
	"github.com/llmfleet/llmfleet/emulator"
	"github.com/llmfleet/llmfleet/proxy"
)

// submitterOnly hides every method of a Submitter but llmfleet.Submitter's,
// so that the proxy parks its callers as before (a goroutine each).
type submitterOnly struct{ llmfleet.Submitter }

// rawPost sends a POST /v1/messages with a budget on conn, as raw bytes.
func rawPost(t *testing.T, conn net.Conn, body string, extra ...string) {
	t.Helper()
	if _, err := io.WriteString(conn, rawRequest(body, extra...)); err != nil {
		t.Fatal(err)
	}
}

func rawRequest(body string, extra ...string) string {
	var b strings.Builder
	b.WriteString("POST /v1/messages HTTP/1.1\r\nHost: proxy\r\nContent-Type: application/json\r\nX-Api-Key: sk-test-a\r\nAnthropic-Version: 2023-06-01\r\n")
	for _, h := range extra {
		b.WriteString(h + "\r\n")
	}
	fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n%s", len(body), body)
	return b.String()
}

func dial(t *testing.T, ts *httptest.Server) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// waitParked waits until srv holds n callers parked on their connections.
func waitParked(t *testing.T, srv *proxy.Server, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); srv.Parked() != n; time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d callers parked on their connections, want %d", srv.Parked(), n)
		}
	}
}

// headerKeys returns the names of h, less those that only a parked
// connection's answer or only net/http's sets.
func headerKeys(h http.Header) []string {
	var keys []string
	for k := range h {
		if k != "Connection" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// TestParkedConnAnswersAsBefore: a batched non-streaming caller parked on
// its connection alone gets the answer a caller held by a goroutine gets,
// headers and body, with Connection: close; the SDK's next call works.
func TestParkedConnAnswersAsBefore(t *testing.T) {
	st := newStack(t, dispatch.Policy{})
	old := &proxy.Server{Submitter: submitterOnly{st.d}, Upstream: st.srv.Upstream}
	oldTS := httptest.NewServer(old.Handler())
	t.Cleanup(oldTS.Close)

	client := newClient(st.ts.URL)
	var raw *http.Response
	for i := range 2 { // the second call goes on a new connection
		msg, err := client.Messages.New(context.Background(), userParams("parked"), optHeader(patient, "600000"), optResponse(&raw))
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if msg.Content[0].Text != "Answer to: parked" || msg.Usage.ServiceTier != "batch" {
			t.Fatalf("call %d: %s", i, msg.RawJSON())
		}
		if !raw.Close || raw.ProtoMajor != 1 || raw.ProtoMinor != 1 {
			t.Fatalf("call %d: not closed: %v %v", i, raw.Close, raw.Header)
		}
	}
	parked := raw

	resp := post(t, st.ts.URL+"/v1/messages", userBody("same"), patient, "600000")
	body := readAll(t, resp.Body)
	was := post(t, oldTS.URL+"/v1/messages", userBody("same"), patient, "600000")
	wasBody := readAll(t, was.Body)
	if resp.StatusCode != 200 || was.StatusCode != 200 || body != wasBody {
		t.Fatalf("answers differ:\n%d %s\n%d %s", resp.StatusCode, body, was.StatusCode, wasBody)
	}
	if !slices.Equal(headerKeys(resp.Header), headerKeys(was.Header)) || was.Close {
		t.Fatalf("headers differ:\n%v\n%v", resp.Header, was.Header)
	}
	for _, k := range []string{"Content-Type", "Content-Length", "Llmfleet-Route"} {
		if resp.Header.Get(k) != was.Header.Get(k) {
			t.Errorf("%s: %q, was %q", k, resp.Header.Get(k), was.Header.Get(k))
		}
	}
	for _, k := range []string{"Request-Id", "Llmfleet-Request-Id", "Llmfleet-Batch-Id", "Date"} {
		if resp.Header.Get(k) == "" || parked.Header.Get(k) == "" {
			t.Errorf("%s missing: %v", k, resp.Header)
		}
	}
	if srv := st.srv; srv.Parked() != 0 {
		t.Fatalf("%d still parked", srv.Parked())
	}
}

// TestParkedConnKeepAliveClient: a raw keep-alive client gets the answer
// with Connection: close, the connection then ends, and its next request
// on a new connection is served.
func TestParkedConnKeepAliveClient(t *testing.T) {
	st := newStack(t, dispatch.Policy{})
	for i := range 2 {
		conn := dial(t, st.ts)
		rawPost(t, conn, userBody(fmt.Sprint("raw ", i)), "Connection: keep-alive", patient+": 600000")
		all := readAll(t, conn) // to the end: the proxy closes the connection
		if !strings.HasPrefix(all, "HTTP/1.1 200 OK\r\n") || !strings.Contains(all, "\r\nConnection: close\r\n") {
			t.Fatalf("answer %q", all)
		}
		resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(all)), nil)
		if err != nil {
			t.Fatal(err)
		}
		body := readAll(t, resp.Body)
		if resp.StatusCode != 200 || !resp.Close || !strings.Contains(body, fmt.Sprintf("Answer to: raw %d", i)) ||
			resp.ContentLength != int64(len(body)) {
			t.Fatalf("%d %v %s", resp.StatusCode, resp.Header, body)
		}
	}
}

// TestParkedConnBudgetTimeout: a parked caller whose budget runs out is
// answered 504 timeout_error, x-should-retry: false, on its connection.
func TestParkedConnBudgetTimeout(t *testing.T) {
	// The emulator's batches take an hour.
	emu := &emulator.Server{Turnaround: func(string, *rand.Rand) time.Duration { return time.Hour }, Logger: slog.New(slog.DiscardHandler)}
	emuTS := httptest.NewServer(emu)
	t.Cleanup(emuTS.Close)
	d := &dispatch.Dispatcher{
		Providers: []llmfleet.Provider{&claude.Provider{BaseURL: emuTS.URL}},
		Policy:    dispatch.Policy{NoRescue: true, PollInterval: time.Hour},
		Logger:    slog.New(slog.DiscardHandler),
	}
	if err := d.Open(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // the hour-long batch is not awaited
		d.Close(ctx)
	})
	srv := &proxy.Server{Submitter: d}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	conn := dial(t, ts)
	// A budget long enough to park the call on a loaded machine (one spent
	// before the call is handed on is refused, unparked).
	rawPost(t, conn, userBody("late"), patient+": 500", "llmfleet-route: batch")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	body := readAll(t, resp.Body)
	if resp.StatusCode != 504 || resp.Header.Get("X-Should-Retry") != "false" || !resp.Close ||
		!strings.Contains(body, `"timeout_error"`) || resp.Header.Get("Llmfleet-Route") != "batch" ||
		resp.Header.Get("Llmfleet-Request-Id") == "" {
		t.Fatalf("%d %v %s", resp.StatusCode, resp.Header, body)
	}
}

// TestParkedConnCallerGone: a caller that leaves while parked costs
// nothing more once its batch ends (no panic, nothing left parked), its
// access line is reported when the answer is written, and its answer
// stays readable by its ticket.
func TestParkedConnCallerGone(t *testing.T) {
	var mu sync.Mutex
	var lines []proxy.Access
	srv := &proxy.Server{Access: func(a proxy.Access) {
		mu.Lock()
		lines = append(lines, a)
		mu.Unlock()
	}}
	st := newDurableStack(t, dispatch.Policy{BatchMinSize: 2, BatchWindow: time.Hour}, srv)
	conn := dial(t, st.ts)
	rawPost(t, conn, userBody("gone"), patient+": 600000")
	waitParked(t, srv, 1)
	mu.Lock()
	if len(lines) != 0 {
		t.Fatalf("access line before the answer: %+v", lines)
	}
	mu.Unlock()
	conn.Close()

	// A second request fills the pool: both are batched.
	resp := post(t, st.ts.URL+"/v1/messages", userBody("stays"), patient, "600000")
	if body := readAll(t, resp.Body); resp.StatusCode != 200 || !strings.Contains(body, "Answer to: stays") {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	waitParked(t, srv, 0)
	var gone proxy.Access
	for deadline := time.Now().Add(10 * time.Second); gone.RequestID == ""; time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no access line for the caller that left")
		}
		mu.Lock()
		for _, a := range lines {
			if a.Messages && a.RequestID != resp.Header.Get("Llmfleet-Request-Id") {
				gone = a
			}
		}
		mu.Unlock()
	}
	if gone.Route != llmfleet.RouteBatch || gone.Model != "claude-test" || gone.Budget != 10*time.Minute {
		t.Fatalf("access line %+v", gone)
	}
	a, _ := fetch(t, st.ts.URL, gone.RequestID, "sk-test-a")
	if a.status != 200 || !strings.Contains(a.body, "Answer to: gone") {
		t.Fatalf("ticket %+v", a)
	}
}

// TestParkedConnShutdown: closing the dispatcher answers the callers parked
// on their connections (their pool goes out), and Drain waits for those
// answers to be written.
func TestParkedConnShutdown(t *testing.T) {
	st := newStack(t, dispatch.Policy{BatchMinSize: 5, BatchWindow: time.Hour})
	var conns []net.Conn
	for i := range 3 {
		conn := dial(t, st.ts)
		rawPost(t, conn, userBody(fmt.Sprint("shutdown ", i)), patient+": 600000")
		conns = append(conns, conn)
	}
	waitParked(t, st.srv, 3)
	// A caller counts as parked from its take-over, a moment before its
	// request reaches the dispatcher: closing before would refuse it.
	for st.d.Stats().QueueDepth != 3 {
		time.Sleep(2 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := st.d.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := st.srv.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if n := st.srv.Parked(); n != 0 {
		t.Fatalf("%d parked after Drain", n)
	}
	for i, conn := range conns {
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		if body := readAll(t, resp.Body); resp.StatusCode != 200 || !strings.Contains(body, fmt.Sprint("Answer to: shutdown ", i)) {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
	}
}

// TestParkedConnDrainTimeout: Drain gives up on callers still waiting when
// its context ends and closes their connections.
func TestParkedConnDrainTimeout(t *testing.T) {
	st := newStack(t, dispatch.Policy{BatchMinSize: 5, BatchWindow: time.Hour})
	conn := dial(t, st.ts)
	rawPost(t, conn, userBody("cut"), patient+": 600000")
	waitParked(t, st.srv, 1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := st.srv.Drain(ctx); err != context.Canceled {
		t.Fatalf("Drain: %v", err)
	}
	if _, err := http.ReadResponse(bufio.NewReader(conn), nil); err == nil {
		t.Fatal("an answer on a connection Drain closed")
	}
}

// TestParkedConnPipelined: a request pipelined behind a batched one makes
// the proxy wait for the answer as before; the answer closes the
// connection and the pipelined request is left unanswered.
func TestParkedConnPipelined(t *testing.T) {
	st := newStack(t, dispatch.Policy{})
	conn := dial(t, st.ts)
	both := rawRequest(userBody("first"), patient+": 600000") + rawRequest(userBody("second"), patient+": 600000")
	if _, err := io.WriteString(conn, both); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if body := readAll(t, resp.Body); resp.StatusCode != 200 || !resp.Close || !strings.Contains(body, "Answer to: first") {
		t.Fatalf("%d %v %s", resp.StatusCode, resp.Header, body)
	}
	if _, err := http.ReadResponse(br, nil); err == nil {
		t.Fatal("the pipelined request was answered on a closed connection")
	}
	waitParked(t, st.srv, 0)
}

// TestParkedConnFallbacks: a ResponseWriter that cannot hand its
// connection over (a recorder, HTTP/2) gets today's answer.
func TestParkedConnFallbacks(t *testing.T) {
	st := newStack(t, dispatch.Policy{})
	req := httptest.NewRequest("POST", "/v1/messages", strings.NewReader(userBody("recorded")))
	req.Header.Set("X-Api-Key", "sk-test-a")
	req.Header.Set(patient, "600000")
	rec := httptest.NewRecorder()
	st.srv.Handler().ServeHTTP(rec, req)
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), "Answer to: recorded") || rec.Header().Get("Connection") != "" {
		t.Fatalf("recorder: %d %v %s", rec.Code, rec.Header(), rec.Body)
	}

	h2 := httptest.NewUnstartedServer(st.srv.Handler())
	h2.EnableHTTP2 = true
	h2.StartTLS()
	t.Cleanup(h2.Close)
	r2, _ := http.NewRequest("POST", h2.URL+"/v1/messages", strings.NewReader(userBody("h2")))
	r2.Header.Set("X-Api-Key", "sk-test-a")
	r2.Header.Set(patient, "600000")
	resp, err := h2.Client().Do(r2)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if body := readAll(t, resp.Body); resp.ProtoMajor != 2 || resp.StatusCode != 200 || !strings.Contains(body, "Answer to: h2") {
		t.Fatalf("h2: %s %d %s", resp.Proto, resp.StatusCode, body)
	}
}
