package proxy_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/proxy"
)

func TestHealthz(t *testing.T) {
	ts := newProxy(t, &proxy.Server{}, nil)
	resp, err := http.Get(ts.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
}

func TestSyncWithoutBudget(t *testing.T) {
	up := newUpstream(t)
	sub := &fakeSubmitter{}
	ts := newProxy(t, &proxy.Server{Submitter: sub}, up)
	client := newClient(ts.URL)

	var raw *http.Response
	msg, err := client.Messages.New(context.Background(), userParams("hello"), optResponse(&raw))
	if err != nil {
		t.Fatal(err)
	}
	if msg.ID != "msg_sync" || raw.Header.Get("llmfleet-route") != "sync" {
		t.Fatalf("got %s route %q", msg.ID, raw.Header.Get("llmfleet-route"))
	}
	if sub.plans != 0 || len(sub.requests()) != 0 {
		t.Fatalf("a request without budget reached the submitter")
	}
	reqs := up.requests()
	if len(reqs) != 1 || reqs[0].header.Get("X-Api-Key") != "sk-test-a" {
		t.Fatalf("upstream got %+v", reqs)
	}
}

func TestBatchedNonStreaming(t *testing.T) {
	up := newUpstream(t)
	sub := &fakeSubmitter{}
	ts := newProxy(t, &proxy.Server{Submitter: sub}, up)
	client := newClient(ts.URL)

	var raw *http.Response
	msg, err := client.Messages.New(context.Background(), userParams("patient"), optHeader("llmfleet-latency-budget-ms", "600000"), optResponse(&raw))
	if err != nil {
		t.Fatal(err)
	}
	if got := msg.Content[0].Text; got != "Answer to: patient" {
		t.Fatalf("text %q", got)
	}
	if raw.Header.Get("llmfleet-route") != "batch" || raw.Header.Get("llmfleet-batch-id") != "msgbatch_test" {
		t.Fatalf("headers %v", raw.Header)
	}
	if len(up.requests()) != 0 {
		t.Fatalf("batched request went upstream")
	}
	reqs := sub.requests()
	if len(reqs) != 1 || !leftOf(10*time.Minute, sub.budgets[0]) {
		t.Fatalf("submitter got %d requests, budgets %v", len(reqs), sub.budgets)
	}
	r := reqs[0]
	if r.Credential.APIKey != "sk-test-a" || r.Header.Get("Anthropic-Version") != "2023-06-01" {
		t.Fatalf("request credential %v header %v", r.Credential, r.Header)
	}
	for k := range r.Header {
		if strings.HasPrefix(strings.ToLower(k), "llmfleet-") || strings.EqualFold(k, "x-api-key") {
			t.Fatalf("header %s passed into the batch", k)
		}
	}
}

func TestBatchBodyExact(t *testing.T) {
	sub := &fakeSubmitter{}
	ts := newProxy(t, &proxy.Server{Submitter: sub, DefaultBudget: time.Hour}, nil)
	body := `{ "stream" : true ,"model":"claude-test","max_tokens":100,"temperature":1.0,"x_unknown":{"a":1e3},` +
		`"messages":[{"role":"user","content":"hi"}]}`
	resp := post(t, ts.URL+"/v1/messages", body)
	readAll(t, resp.Body)
	want := `{ "model":"claude-test","max_tokens":100,"temperature":1.0,"x_unknown":{"a":1e3},` +
		`"messages":[{"role":"user","content":"hi"}]}`
	if got := string(sub.requests()[0].Body); got != want {
		t.Fatalf("batched body\n got %s\nwant %s", got, want)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("content-type %q for stream:true", ct)
	}
}

func TestBatchedStreamingSDK(t *testing.T) {
	for name, body := range richMessages {
		t.Run(name, func(t *testing.T) {
			sub := &fakeSubmitter{reply: func(ctx context.Context, req *llmfleet.Request) (*llmfleet.Response, error) {
				return &llmfleet.Response{Route: llmfleet.RouteBatch, StatusCode: 200, Body: []byte(body), BatchID: "msgbatch_x"}, nil
			}}
			ts := newProxy(t, &proxy.Server{Submitter: sub}, nil)
			client := newClient(ts.URL)

			want, err := client.Messages.New(context.Background(), userParams("x"), optHeader("llmfleet-route", "batch"))
			if err != nil {
				t.Fatal(err)
			}
			if !sameJSON(t, want.RawJSON(), body) {
				t.Fatalf("non-streaming body changed:\n%s", want.RawJSON())
			}

			stream := client.Messages.NewStreaming(context.Background(), userParams("x"), optHeader("llmfleet-route", "batch"))
			var acc anthropic.Message
			var types []string
			for stream.Next() {
				ev := stream.Current()
				types = append(types, ev.Type)
				if err := acc.Accumulate(ev); err != nil {
					t.Fatal(err)
				}
			}
			if err := stream.Err(); err != nil {
				t.Fatal(err)
			}
			if !sameJSON(t, acc.RawJSON(), body) {
				t.Fatalf("accumulated stream differs:\n got %s\nwant %s\nevents %v", acc.RawJSON(), body, types)
			}
			if acc.StopReason != want.StopReason || acc.Usage.OutputTokens != want.Usage.OutputTokens || len(acc.Content) != len(want.Content) {
				t.Fatalf("typed fields differ: %+v", acc)
			}
		})
	}
}

// richMessages are batch results with every kind of content block.
var richMessages = map[string]string{
	"text":          `{"id":"msg_1","type":"message","role":"assistant","model":"claude-test","content":[{"type":"text","text":"Hello <b> & \"you\"\n","citations":null}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":12,"cache_creation_input_tokens":3,"cache_read_input_tokens":4,"cache_creation":{"ephemeral_5m_input_tokens":3,"ephemeral_1h_input_tokens":0},"output_tokens":6,"service_tier":"batch"}}`,
	"tool_use":      `{"id":"msg_2","type":"message","role":"assistant","model":"claude-test","content":[{"type":"text","text":"Checking","citations":null},{"type":"tool_use","id":"toolu_01","name":"get_weather","input":{"city":"Paris","n":1.50,"nested":{"a":[1,2]}}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":40,"output_tokens":89}}`,
	"thinking":      `{"id":"msg_3","type":"message","role":"assistant","model":"claude-test","content":[{"type":"thinking","thinking":"Let me think.","signature":"c2lnbmF0dXJl"},{"type":"redacted_thinking","data":"ZW5jcnlwdGVk"},{"type":"text","text":"Done.","citations":null}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":40,"output_tokens":120}}`,
	"stop_sequence": `{"id":"msg_4","type":"message","role":"assistant","model":"claude-test","content":[{"type":"text","text":"1, 2, ","citations":null}],"stop_reason":"stop_sequence","stop_sequence":"3","usage":{"input_tokens":5,"output_tokens":5}}`,
	"server_tools":  `{"id":"msg_5","type":"message","role":"assistant","model":"claude-test","content":[{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"go"}},{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[{"type":"web_search_result","url":"https://go.dev","title":"Go","encrypted_content":"abc","page_age":null}]},{"type":"text","text":"Go is a language.","citations":[{"type":"web_search_result_location","url":"https://go.dev","title":"Go","encrypted_index":"xyz","cited_text":"Go is"}]}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":5,"server_tool_use":{"web_search_requests":1,"web_fetch_requests":0}}}`,
	"pretty":        "{\n  \"id\": \"msg_6\",\n  \"type\": \"message\",\n  \"role\": \"assistant\",\n  \"model\": \"claude-test\",\n  \"content\": [\n    {\"type\": \"text\", \"text\": \"a\\nb\"}\n  ],\n  \"stop_reason\": \"max_tokens\",\n  \"stop_sequence\": null,\n  \"usage\": {\"input_tokens\": 1, \"output_tokens\": 1}\n}",
}

func TestStreamEventOrder(t *testing.T) {
	sub := &fakeSubmitter{reply: func(ctx context.Context, req *llmfleet.Request) (*llmfleet.Response, error) {
		return &llmfleet.Response{Body: []byte(richMessages["tool_use"]), BatchID: "msgbatch_x"}, nil
	}}
	ts := newProxy(t, &proxy.Server{Submitter: sub}, nil)
	resp := post(t, ts.URL+"/v1/messages", `{"model":"m","max_tokens":5,"stream":true,"messages":[{"role":"user","content":"x"}]}`, "llmfleet-route", "batch")
	got := readAll(t, resp.Body)
	want := "event: message_start\n" +
		`data: {"type":"message_start","message":{"id":"msg_2","type":"message","role":"assistant","model":"claude-test","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":40,"output_tokens":1}}}` + "\n\n" +
		"event: content_block_start\n" + `data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":"","citations":null}}` + "\n\n" +
		"event: content_block_delta\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Checking"}}` + "\n\n" +
		"event: content_block_stop\n" + `data: {"type":"content_block_stop","index":0}` + "\n\n" +
		"event: content_block_start\n" + `data: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_01","name":"get_weather","input":{}}}` + "\n\n" +
		"event: content_block_delta\n" + `data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}` + "\n\n" +
		"event: content_block_delta\n" + `data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"city\":\"Paris\",\"n\":1.50,\"nested\":{\"a\":[1,2]}}"}}` + "\n\n" +
		"event: content_block_stop\n" + `data: {"type":"content_block_stop","index":1}` + "\n\n" +
		"event: message_delta\n" + `data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null,"stop_details":null},"usage":{"input_tokens":40,"output_tokens":89}}` + "\n\n" +
		"event: message_stop\n" + `data: {"type":"message_stop"}` + "\n\n"
	if got != want {
		t.Fatalf("stream\n got %s\nwant %s", got, want)
	}
	if resp.Header.Get("llmfleet-route") != "batch" || resp.Header.Get("llmfleet-batch-id") != "msgbatch_x" {
		t.Fatalf("headers %v", resp.Header)
	}
}

func TestStreamPingsThenResult(t *testing.T) {
	release := make(chan struct{})
	sub := &fakeSubmitter{reply: func(ctx context.Context, req *llmfleet.Request) (*llmfleet.Response, error) {
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return &llmfleet.Response{Body: testMessage(req.Body), BatchID: "msgbatch_late"}, nil
	}}
	ts := newProxy(t, &proxy.Server{Submitter: sub, PingInterval: time.Millisecond}, nil)
	resp := post(t, ts.URL+"/v1/messages", `{"model":"m","max_tokens":5,"stream":true,"messages":[{"role":"user","content":"wait"}]}`, "llmfleet-latency-budget-ms", "60000")
	if resp.StatusCode != 200 || resp.Header.Get("llmfleet-route") != "batch" {
		t.Fatalf("status %d headers %v", resp.StatusCode, resp.Header)
	}
	br := bufio.NewReader(resp.Body)
	for i := 0; i < 4; i++ { // two ping events
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"event: ping\n", "data: {\"type\": \"ping\"}\n", "\n"}[i%3]; i < 3 && line != want {
			t.Fatalf("line %d %q", i, line)
		}
	}
	close(release)
	rest, err := io.ReadAll(br)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(rest), `"text":"Answer to: wait"`) || !strings.HasSuffix(string(rest), "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n") {
		t.Fatalf("rest of stream: %s", rest)
	}
	if got := resp.Trailer.Get("llmfleet-batch-id"); got != "msgbatch_late" {
		t.Fatalf("trailer %v", resp.Trailer)
	}
}

func TestStreamErrorAfterBegin(t *testing.T) {
	release := make(chan struct{})
	sub := &fakeSubmitter{reply: func(ctx context.Context, req *llmfleet.Request) (*llmfleet.Response, error) {
		<-release
		return nil, &llmfleet.Error{StatusCode: 529, Type: "overloaded_error", Message: "Overloaded",
			Body: []byte("{\"type\":\"error\",\n\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"},\"request_id\":\"req_1\"}")}
	}}
	ts := newProxy(t, &proxy.Server{Submitter: sub, PingInterval: time.Millisecond}, nil)
	resp := post(t, ts.URL+"/v1/messages", `{"model":"m","max_tokens":5,"stream":true,"messages":[{"role":"user","content":"x"}]}`, "llmfleet-route", "batch")
	br := bufio.NewReader(resp.Body)
	if line, _ := br.ReadString('\n'); line != "event: ping\n" {
		t.Fatalf("first line %q", line)
	}
	close(release)
	rest := readAll(t, br)
	want := "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"},\"request_id\":\"req_1\"}\n\n"
	if !strings.HasSuffix(rest, want) {
		t.Fatalf("stream ends %q", rest)
	}
}

func TestBatchErrorsSDK(t *testing.T) {
	cases := []struct {
		err    error
		status int
		typ    string
	}{
		{&llmfleet.Error{StatusCode: 400, Type: "invalid_request_error", Message: "bad thing", RequestID: "req_x",
			Body: []byte(`{"type":"error","error":{"type":"invalid_request_error","message":"bad thing"},"request_id":"req_x"}`)}, 400, "invalid_request_error"},
		{&llmfleet.Error{Type: "rate_limit_error", Message: "slow down"}, 429, "rate_limit_error"},
		{llmfleet.ErrBudgetExceeded, 504, "timeout_error"},
		{fmt.Errorf("%w (10m0s, sync): %w", llmfleet.ErrUpstreamTimeout, context.Canceled), 504, "timeout_error"},
		{llmfleet.ErrBatchExpired, 529, "overloaded_error"},
		{llmfleet.ErrClosed, 529, "overloaded_error"},
		{llmfleet.ErrBatchCanceled, 500, "api_error"},
		{errors.New("boom"), 502, "api_error"},
	}
	for _, c := range cases {
		t.Run(c.typ, func(t *testing.T) {
			sub := &fakeSubmitter{reply: func(ctx context.Context, req *llmfleet.Request) (*llmfleet.Response, error) {
				return nil, c.err
			}}
			ts := newProxy(t, &proxy.Server{Submitter: sub, DefaultBudget: time.Hour}, nil)
			client := newClient(ts.URL)
			for _, streaming := range []bool{false, true} {
				var err error
				if streaming {
					s := client.Messages.NewStreaming(context.Background(), userParams("x"))
					for s.Next() {
					}
					err = s.Err()
				} else {
					_, err = client.Messages.New(context.Background(), userParams("x"))
				}
				var ae *anthropic.Error
				if !errors.As(err, &ae) {
					t.Fatalf("streaming=%v: error %v is not an *anthropic.Error", streaming, err)
				}
				if ae.StatusCode != c.status || string(ae.Type()) != c.typ {
					t.Fatalf("streaming=%v: got %d %s %s", streaming, ae.StatusCode, ae.Type(), ae.RawJSON())
				}
				if ae.Response.Header.Get("llmfleet-route") != "batch" || ae.RequestID == "" {
					t.Fatalf("headers %v", ae.Response.Header)
				}
				if noRetry := ae.Response.Header.Get("x-should-retry") == "false"; noRetry != errors.Is(c.err, llmfleet.ErrBudgetExceeded) {
					t.Fatalf("x-should-retry %q for %d", ae.Response.Header.Get("x-should-retry"), c.status)
				}
			}
		})
	}
}

func TestBatchValidation(t *testing.T) {
	sub := &fakeSubmitter{}
	ts := newProxy(t, &proxy.Server{Submitter: sub}, nil)
	cases := map[string]string{
		"not json":        `{"model":`,
		"not object":      `[1]`,
		"no model":        `{"max_tokens":5,"messages":[{"role":"user","content":"x"}]}`,
		"model number":    `{"model":3,"max_tokens":5,"messages":[{"role":"user","content":"x"}]}`,
		"no max_tokens":   `{"model":"m","messages":[{"role":"user","content":"x"}]}`,
		"max_tokens 0":    `{"model":"m","max_tokens":0,"messages":[{"role":"user","content":"x"}]}`,
		"max_tokens 1.5":  `{"model":"m","max_tokens":1.5,"messages":[{"role":"user","content":"x"}]}`,
		"no messages":     `{"model":"m","max_tokens":5}`,
		"empty messages":  `{"model":"m","max_tokens":5,"messages":[ ]}`,
		"messages object": `{"model":"m","max_tokens":5,"messages":{}}`,
		"stream string":   `{"model":"m","max_tokens":5,"stream":"yes","messages":[{"role":"user","content":"x"}]}`,
	}
	for name, body := range cases {
		resp := post(t, ts.URL+"/v1/messages", body, "llmfleet-latency-budget-ms", "600000")
		got := readAll(t, resp.Body)
		if resp.StatusCode != 400 || !strings.Contains(got, `"type":"invalid_request_error"`) || !strings.Contains(got, `"request_id":"req_`) ||
			resp.Header.Get("llmfleet-route") != "batch" || resp.Header.Get("request-id") == "" {
			t.Errorf("%s: %d %s %v", name, resp.StatusCode, got, resp.Header)
		}
	}
	if len(sub.requests()) != 0 {
		t.Fatal("an invalid request was queued")
	}
	big := `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"` + strings.Repeat("a", proxy.MaxBodyBytes) + `"}]}`
	resp := post(t, ts.URL+"/v1/messages", big, "llmfleet-latency-budget-ms", "600000")
	if got := readAll(t, resp.Body); resp.StatusCode != 413 || !strings.Contains(got, `"request_too_large"`) {
		t.Fatalf("big body: %d %s", resp.StatusCode, got)
	}
}

func TestMalformedLlmfleetHeaders(t *testing.T) {
	up := newUpstream(t)
	ts := newProxy(t, &proxy.Server{Submitter: &fakeSubmitter{}}, up)
	for _, h := range [][]string{
		{"llmfleet-latency-budget-ms", "10s"},
		{"llmfleet-latency-budget-ms", "-5"},
		{"llmfleet-route", "later"},
	} {
		resp := post(t, ts.URL+"/v1/messages", simpleBody, h...)
		got := readAll(t, resp.Body)
		if resp.StatusCode != 400 || !strings.Contains(got, "invalid_request_error") || resp.Header.Get("llmfleet-route") != "sync" {
			t.Errorf("%v: %d %s", h, resp.StatusCode, got)
		}
	}
	resp := post(t, ts.URL+"/budget/soon/v1/messages", simpleBody)
	if got := readAll(t, resp.Body); resp.StatusCode != 400 || !strings.Contains(got, "invalid_request_error") {
		t.Errorf("bad prefix: %d %s", resp.StatusCode, got)
	}
	if len(up.requests()) != 0 {
		t.Fatal("a malformed request went upstream")
	}
}

func TestBudgetPrefix(t *testing.T) {
	up := newUpstream(t)
	sub := &fakeSubmitter{}
	ts := newProxy(t, &proxy.Server{Submitter: sub}, up)
	client := newClient(ts.URL + "/budget/600000")

	var raw *http.Response
	if _, err := client.Messages.New(context.Background(), userParams("prefixed"), optResponse(&raw)); err != nil {
		t.Fatal(err)
	}
	if raw.Header.Get("llmfleet-route") != "batch" || !leftOf(10*time.Minute, sub.budgets[0]) {
		t.Fatalf("route %q budgets %v", raw.Header.Get("llmfleet-route"), sub.budgets)
	}
	// The header wins over the prefix; budget 0 is sync.
	if _, err := client.Messages.New(context.Background(), userParams("now"), optHeader("llmfleet-latency-budget-ms", "0"), optResponse(&raw)); err != nil {
		t.Fatal(err)
	}
	if raw.Header.Get("llmfleet-route") != "sync" {
		t.Fatalf("route %q", raw.Header.Get("llmfleet-route"))
	}
	// Other paths under the prefix pass through.
	if _, err := client.Messages.CountTokens(context.Background(), anthropic.MessageCountTokensParams{
		Model: "claude-test", Messages: userParams("x").Messages,
	}); err != nil {
		t.Fatal(err)
	}
	reqs := up.requests()
	if len(reqs) != 2 || reqs[0].path != "/v1/messages" || reqs[1].path != "/v1/messages/count_tokens" {
		t.Fatalf("upstream got %+v", reqs)
	}
	// A base URL given with a trailing slash doubles the slash: still
	// routed, not redirected.
	body := `{"model":"claude-test","max_tokens":16,"messages":[{"role":"user","content":"slash"}]}`
	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/budget/600000//v1/messages", strings.NewReader(body))
	req.Header.Set("x-api-key", "k")
	req.Header.Set("anthropic-version", "2023-06-01")
	req.Header.Set("content-type", "application/json")
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("llmfleet-route") != "batch" {
		t.Fatalf("doubled slash: %d, route %q", resp.StatusCode, resp.Header.Get("llmfleet-route"))
	}
}

func TestPassThroughAndNoLlmfleetHeadersUpstream(t *testing.T) {
	up := newUpstream(t)
	sub := &fakeSubmitter{route: llmfleet.RouteSync}
	ts := newProxy(t, &proxy.Server{Submitter: sub}, up)
	// A header llmfleet does not know refuses a routed call
	// (TestUnknownOwnHeaderRefused); a pass-through one drops it.
	client := newClient(ts.URL, optHeader("llmfleet-latency-budget-ms", "600000"), optHeader("llmfleet-deadline", "hard"))

	if _, err := client.Messages.New(context.Background(), userParams("sync by plan")); err != nil {
		t.Fatal(err)
	}
	if sub.plans != 1 {
		t.Fatalf("plans %d", sub.plans)
	}
	s := client.Messages.NewStreaming(context.Background(), userParams("sync stream"))
	var acc anthropic.Message
	for s.Next() {
		acc.Accumulate(s.Current())
	}
	if s.Err() != nil || acc.Content[0].Text != "sync answer" {
		t.Fatalf("sync stream: %v %+v", s.Err(), acc)
	}
	if _, err := client.Messages.Batches.Get(context.Background(), "msgbatch_1", anthropic.MessageBatchGetParams{}, optHeader("llmfleet-other", "x")); err != nil {
		t.Fatal(err)
	}
	page, err := client.Messages.Batches.List(context.Background(), anthropic.MessageBatchListParams{})
	_ = page
	if err != nil {
		t.Fatal(err)
	}
	reqs := up.requests()
	if len(reqs) != 4 {
		t.Fatalf("upstream got %d requests", len(reqs))
	}
	if reqs[0].body == nil || !strings.Contains(string(reqs[0].body), "sync by plan") {
		t.Fatalf("sync body %q", reqs[0].body)
	}
	if reqs[2].path != "/v1/messages/batches/msgbatch_1" || reqs[3].method != "GET" {
		t.Fatalf("pass-through %+v %+v", reqs[2], reqs[3])
	}
	for _, r := range reqs {
		for k := range r.header {
			if strings.HasPrefix(strings.ToLower(k), "llmfleet-") {
				t.Fatalf("%s sent upstream on %s", k, r.path)
			}
		}
		if r.header.Get("X-Api-Key") != "sk-test-a" || r.header.Get("X-Forwarded-For") != "" {
			t.Fatalf("upstream headers %v", r.header)
		}
	}
}

func TestToolResultsSync(t *testing.T) {
	up := newUpstream(t)
	sub := &fakeSubmitter{}
	ts := newProxy(t, &proxy.Server{Submitter: sub, DefaultBudget: time.Hour, ToolResultsSync: true}, up)
	toolTurn := `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"x"},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"t","input":{}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"42"}]}]}`
	resp := post(t, ts.URL+"/v1/messages", toolTurn)
	readAll(t, resp.Body)
	if resp.Header.Get("llmfleet-route") != "sync" || len(up.requests()) != 1 {
		t.Fatalf("tool turn route %q", resp.Header.Get("llmfleet-route"))
	}
	resp = post(t, ts.URL+"/v1/messages", simpleBody)
	readAll(t, resp.Body)
	if resp.Header.Get("llmfleet-route") != "batch" {
		t.Fatalf("plain turn route %q", resp.Header.Get("llmfleet-route"))
	}
}

func TestClientKeys(t *testing.T) {
	up := newUpstream(t)
	sub := &fakeSubmitter{}
	keys := &proxy.ClientKeys{
		Upstream: llmfleet.Credential{APIKey: "sk-upstream"},
		Hashes:   map[string]string{proxy.HashKey("proxy-key-alice"): "alice"},
	}
	ts := newProxy(t, &proxy.Server{Submitter: sub, Credentials: keys.Map}, up)

	bad := newClient(ts.URL)
	_, err := bad.Messages.New(context.Background(), userParams("x"))
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.StatusCode != 401 || !strings.Contains(ae.RawJSON(), "authentication_error") {
		t.Fatalf("unknown key: %v", err)
	}
	if _, err := bad.Models.List(context.Background(), anthropic.ModelListParams{}); !errors.As(err, &ae) || ae.StatusCode != 401 {
		t.Fatalf("unknown key on pass-through: %v", err)
	}

	good := newClient(ts.URL, optAPIKey("proxy-key-alice"))
	if _, err := good.Messages.New(context.Background(), userParams("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := good.Messages.New(context.Background(), userParams("x"), optHeader("llmfleet-route", "batch")); err != nil {
		t.Fatal(err)
	}
	if _, err := good.Messages.CountTokens(context.Background(), anthropic.MessageCountTokensParams{Model: "m", Messages: userParams("x").Messages}); err != nil {
		t.Fatal(err)
	}
	// What the API keeps under the shared key, but for batches and the
	// files the client's own code wrote, is not passed on: files, for one
	// (a file not the client's is unknown to it).
	for _, c := range []struct {
		method, path string
		status       int
		typ          string
	}{{"GET", "/v1/files", 403, "permission_error"}, {"GET", "/v1/files/file_x/content", 404, "not_found_error"},
		{"DELETE", "/v1/files/file_x", 403, "permission_error"}, {"POST", "/v1/skills", 403, "permission_error"}} {
		req, _ := http.NewRequest(c.method, ts.URL+c.path, nil)
		req.Header.Set("x-api-key", "proxy-key-alice")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status || !strings.Contains(string(b), c.typ) {
			t.Errorf("%s %s with a held key: %d %s", c.method, c.path, resp.StatusCode, b)
		}
	}
	for _, r := range up.requests() {
		if r.header.Get("X-Api-Key") != "sk-upstream" {
			t.Fatalf("upstream key %q on %s", r.header.Get("X-Api-Key"), r.path)
		}
	}
	if c := sub.requests()[0].Credential; c.APIKey != "sk-upstream" {
		t.Fatalf("batched credential %v", c)
	}
}

func TestNotFound(t *testing.T) {
	ts := newProxy(t, &proxy.Server{}, nil)
	resp, err := http.Get(ts.URL + "/nowhere")
	if err != nil {
		t.Fatal(err)
	}
	got := readAll(t, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 404 || !strings.Contains(got, "not_found_error") {
		t.Fatalf("%d %s", resp.StatusCode, got)
	}
}

func TestUpstreamDown(t *testing.T) {
	up := newUpstream(t)
	up.Close()
	ts := newProxy(t, &proxy.Server{}, up)
	resp := post(t, ts.URL+"/v1/messages", simpleBody)
	got := readAll(t, resp.Body)
	if resp.StatusCode != 502 || !strings.Contains(got, "api_error") || resp.Header.Get("llmfleet-route") != "sync" {
		t.Fatalf("%d %s", resp.StatusCode, got)
	}
}

func TestBatchWithoutCredential(t *testing.T) {
	sub := &fakeSubmitter{}
	ts := newProxy(t, &proxy.Server{Submitter: sub}, nil)
	for _, h := range [][]string{
		{"X-Api-Key", "", "llmfleet-latency-budget-ms", "600000"},
		{"X-Api-Key", "", "llmfleet-route", "batch"},
	} {
		resp := post(t, ts.URL+"/v1/messages", simpleBody, h...)
		got := readAll(t, resp.Body)
		if resp.StatusCode != 401 || !strings.Contains(got, `"type":"authentication_error"`) || resp.Header.Get("request-id") == "" {
			t.Errorf("%v: %d %s", h, resp.StatusCode, got)
		}
	}
	if len(sub.requests()) != 0 {
		t.Fatal("a request without a credential was queued")
	}
}
