package proxy_test

// The tests of this file check the ledger of sync and flex calls through
// the proxy that end otherwise than answered whole, as a fault campaign
// found them: each call the upstream may bill has one entry, and a call
// never written upstream has none that says it may be billed.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/emulator"
	"github.com/llmfleet/llmfleet/openaiemu"
	"github.com/llmfleet/llmfleet/proxy"
)

// reviewPost posts body to path on a proxy in front of srv, with header pairs hdr.
// postLedgered serves srv on loopback, posts body to path with the
// headers given (name, value pairs) and the client keys of every face,
// and returns the ledger's entries, the answer and its body.
func postLedgered(t *testing.T, srv *proxy.Server, path, body string, hdr ...string) (*ledgerTap, *http.Response, string) {
	l := newLedgerTap(srv)
	ps := httptest.NewServer(srv.Handler())
	t.Cleanup(ps.Close)
	req, _ := http.NewRequest("POST", ps.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer sk-x")
	req.Header.Set("X-Api-Key", "sk-x")
	req.Header.Set("X-Goog-Api-Key", "k-x")
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, b, err := doRead(http.DefaultClient, req)
	if err != nil {
		t.Fatal(err)
	}
	return l, resp, b
}

// answerAsCut is a transport that answers a flex attempt (its 200 read
// upstream) only once the call's context ended: the answer and the cut
// come together, as net/http may give them.
type answerAsCut struct{}

func (answerAsCut) RoundTrip(req *http.Request) (*http.Response, error) {
	b, _ := io.ReadAll(req.Body)
	req.Body = io.NopCloser(bytes.NewReader(b))
	if !bytes.Contains(b, []byte(`"service_tier":"flex"`)) {
		return http.DefaultTransport.RoundTrip(req)
	}
	res, err := http.DefaultTransport.RoundTrip(req.WithContext(context.WithoutCancel(req.Context())))
	<-req.Context().Done()
	time.Sleep(20 * time.Millisecond)
	return res, err
}

// TestFlexAnsweredAsCutLedgeredOnce: a flex attempt answered just as the
// call's hard deadline cut it is one entry (the cut call's), not also a
// given-up attempt's.
func TestFlexAnsweredAsCutLedgeredOnce(t *testing.T) {
	emu := &openaiemu.Server{}
	up := httptest.NewServer(emu)
	defer up.Close()
	u, _ := url.Parse(up.URL)
	srv := &proxy.Server{Submitter: &fakeSubmitter{route: llmfleet.RouteFlex}, OpenAIUpstream: u, Transport: answerAsCut{}}
	l, _, _ := postLedgered(t, srv, "/openai/v1/chat/completions", flexChatBody,
		"llmfleet-latency-budget-ms", "300", "llmfleet-deadline", "hard")
	first := oneEntry(t, l.entries)
	select { // both entries would be in before the answer to the caller
	case second := <-l.entries:
		t.Fatalf("billed upstream %d time(s), ledgered twice:\n%+v\n%+v", len(emu.Stats().Billed), first, second)
	default:
	}
}

// TestCutBeforeWrittenNotBilled: a call cut at its hard deadline while
// its connection was still being made, on every face, was never written
// upstream: its entry has no usage, not an estimate.
func TestCutBeforeWrittenNotBilled(t *testing.T) {
	hole := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}}
	u, _ := url.Parse("http://upstream.invalid")
	for path, body := range map[string]string{
		"/v1/messages":                `{"model":"claude-sonnet-4-6","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`,
		"/openai/v1/chat/completions": `{"model":"gpt-4.1","messages":[{"role":"user","content":"hi"}]}`,
		"/gemini/v1beta/models/gemini-2.5-flash:generateContent": `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`,
	} {
		srv := &proxy.Server{Upstream: u, OpenAIUpstream: u, GeminiUpstream: u, Transport: hole}
		l, resp, _ := postLedgered(t, srv, path, body, "llmfleet-route", "sync", "llmfleet-latency-budget-ms", "300", "llmfleet-deadline", "hard")
		if e := oneEntry(t, l.entries); resp.StatusCode != 504 || e.Estimated || e.Usage != (llmfleet.Usage{}) {
			t.Errorf("%s: never connected, ledgered as billed: %+v", path, e)
		}
	}
}

// TestDroppedAfterWrittenEstimated: a sync call the upstream carried out
// (and billed) before dropping its connection unanswered is estimated.
func TestDroppedAfterWrittenEstimated(t *testing.T) {
	st := newBudgetStack(t, &proxy.Server{}, nil)
	st.emu.InjectFault(emulator.Fault{Endpoint: emulator.EndpointMessages, DropResponse: true})
	st.post(t, "/v1/messages", simpleBody)
	if e := st.entry(t); len(st.emu.Stats().Bills) != 1 || !e.Estimated && e.Usage == (llmfleet.Usage{}) {
		t.Fatalf("billed %d, ledgered unbilled: %+v", len(st.emu.Stats().Bills), e)
	}
}

// TestOpenAILongAnswerUsageRead: the usage of a JSON answer longer than
// what the tap keeps whole (8,000 embeddings, 1.6 MB) is read as it
// passes.
func TestOpenAILongAnswerUsageRead(t *testing.T) {
	up := httptest.NewServer(&openaiemu.Server{})
	defer up.Close()
	u, _ := url.Parse(up.URL)
	inputs := make([]string, 8000)
	for i := range inputs {
		inputs[i] = fmt.Sprintf("text %d", i)
	}
	in, _ := json.Marshal(inputs)
	l, resp, b := postLedgered(t, &proxy.Server{OpenAIUpstream: u}, "/openai/v1/embeddings",
		`{"model":"text-embedding-3-small","input":`+string(in)+`}`, "llmfleet-route", "sync")
	if e := oneEntry(t, l.entries); resp.StatusCode != 200 || e.Usage.InputTokens != 16000 {
		t.Fatalf("%d-byte answer; entry %+v", len(b), e)
	}
}

// TestOpenAIStreamFailedAfterItsAnswerBegan: a chat stream the upstream
// ends with an error event after its 200, which carried out the call, is
// estimated in the ledger rather than priced at nothing.
func TestOpenAIStreamFailedAfterItsAnswerBegan(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"id":"c1","object":"chat.completion.chunk","model":"gpt-4.1","choices":[{"index":0,"delta":{"content":"Hel"}}]}`+"\n\n")
		io.WriteString(w, `data: {"error":{"message":"The server had an error while processing your request.","type":"server_error"}}`+"\n\n")
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	body := `{"model":"gpt-4.1","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	l, resp, _ := postLedgered(t, &proxy.Server{OpenAIUpstream: u}, "/openai/v1/chat/completions", body, "llmfleet-route", "sync")
	if e := oneEntry(t, l.entries); resp.StatusCode != 200 || e.Outcome != "server_error" || !e.Estimated ||
		e.Usage != llmfleet.EstimatedUsage(int64(len(body))) {
		t.Fatalf("%d; entry %+v", resp.StatusCode, e)
	}
}
