package proxy_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/middleware/anthropicmw"
	"github.com/llmfleet/llmfleet/proxy"
)

func TestMiddlewareRoutes(t *testing.T) {
	up := newUpstream(t)
	sub := &fakeSubmitter{}
	srv := &proxy.Server{Submitter: sub, PingInterval: time.Millisecond}
	client := newClient(up.URL, option.WithMiddleware(anthropicmw.New(srv)))

	// No budget: DefaultBudget 0, the SDK's own call (sync).
	var raw *http.Response
	msg, err := client.Messages.New(context.Background(), userParams("direct"), optResponse(&raw))
	if err != nil {
		t.Fatal(err)
	}
	if msg.ID != "msg_sync" || raw.Header.Get("llmfleet-route") != "sync" || sub.plans != 0 {
		t.Fatalf("unbudgeted call: %s %v plans %d", msg.ID, raw.Header, sub.plans)
	}

	// No budget with a DefaultBudget: the same rule as the proxy's.
	patient := &proxy.Server{Submitter: &fakeSubmitter{}, PingInterval: time.Millisecond, DefaultBudget: 10 * time.Minute}
	pc := newClient(up.URL, option.WithMiddleware(anthropicmw.New(patient)))
	if _, err := pc.Messages.New(context.Background(), userParams("default"), optResponse(&raw)); err != nil {
		t.Fatal(err)
	}
	if raw.Header.Get("llmfleet-route") != "batch" {
		t.Fatalf("unbudgeted call with a default budget: %v", raw.Header)
	}

	// A budget: batched, non-streaming and streaming.
	ctx := llmfleet.WithBudget(context.Background(), 10*time.Minute)
	msg, err = client.Messages.New(ctx, userParams("patient"), optResponse(&raw))
	if err != nil {
		t.Fatal(err)
	}
	if msg.Content[0].Text != "Answer to: patient" || raw.Header.Get("llmfleet-route") != "batch" || raw.Header.Get("llmfleet-batch-id") != "msgbatch_test" {
		t.Fatalf("batched call: %+v %v", msg, raw.Header)
	}
	stream := client.Messages.NewStreaming(ctx, userParams("patient"))
	var acc anthropic.Message
	for stream.Next() {
		if err := acc.Accumulate(stream.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if !sameJSON(t, acc.RawJSON(), msg.RawJSON()) {
		t.Fatalf("streamed %s\nwant %s", acc.RawJSON(), msg.RawJSON())
	}
	if got := sub.budgets; len(got) != 2 || !leftOf(10*time.Minute, got[0]) {
		t.Fatalf("budgets %v", got)
	}
	if sub.requests()[1].Credential.APIKey != "sk-test-a" {
		t.Fatalf("credential %v", sub.requests()[1].Credential)
	}
	if n := len(up.requests()); n != 1 {
		t.Fatalf("upstream got %d requests", n)
	}

	// Plan says sync: the SDK's own call, marked.
	sub.route = llmfleet.RouteSync
	msg, err = client.Messages.New(ctx, userParams("tight"), optResponse(&raw))
	if err != nil {
		t.Fatal(err)
	}
	if msg.ID != "msg_sync" || raw.Header.Get("llmfleet-route") != "sync" {
		t.Fatalf("sync call: %s %v", msg.ID, raw.Header)
	}
	reqs := up.requests()
	if len(reqs) != 2 || !sameJSON(t, string(reqs[1].body), string(mustJSON(t, userParams("tight")))) {
		t.Fatalf("upstream body %s", reqs[len(reqs)-1].body)
	}
}

func TestMiddlewareErrors(t *testing.T) {
	release := make(chan struct{})
	sub := &fakeSubmitter{reply: func(ctx context.Context, req *llmfleet.Request) (*llmfleet.Response, error) {
		if lastUserText(req.Body) == "late" {
			<-release
		}
		return nil, &llmfleet.Error{StatusCode: 529, Type: "overloaded_error", Message: "Overloaded"}
	}}
	// No ping may begin a stream before its error is known: the status
	// is still free to be 529.
	srv := &proxy.Server{Submitter: sub, PingInterval: time.Hour}
	client := newClient("http://127.0.0.1:1", option.WithMiddleware(anthropicmw.New(srv)))
	ctx := llmfleet.WithBudget(context.Background(), time.Hour)

	_, err := client.Messages.New(ctx, userParams("x"))
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.StatusCode != 529 || ae.Type() != "overloaded_error" {
		t.Fatalf("error %v", err)
	}
	s := client.Messages.NewStreaming(ctx, userParams("x"))
	for s.Next() {
	}
	if !errors.As(s.Err(), &ae) || ae.StatusCode != 529 {
		t.Fatalf("stream error %v", s.Err())
	}

	// An error once the stream has begun (a ping began it) arrives as an
	// error event.
	pinging := newClient("http://127.0.0.1:1", option.WithMiddleware(anthropicmw.New(
		&proxy.Server{Submitter: sub, PingInterval: time.Millisecond})))
	s = pinging.Messages.NewStreaming(ctx, userParams("late"))
	close(release)
	for s.Next() {
		if s.Current().Type != "" {
			t.Fatalf("event %s", s.Current().Type)
		}
	}
	if err := s.Err(); err == nil || !errors.As(err, &ae) || ae.Type() != "overloaded_error" {
		t.Fatalf("late stream error %v", err)
	}

	// A malformed route header is refused.
	_, err = client.Messages.New(ctx, userParams("x"), optHeader("llmfleet-route", "fast"))
	if !errors.As(err, &ae) || ae.StatusCode != 400 {
		t.Fatalf("bad route: %v", err)
	}
}

func TestMiddlewareCancel(t *testing.T) {
	started := make(chan struct{})
	done := make(chan error, 1)
	sub := &fakeSubmitter{reply: func(ctx context.Context, req *llmfleet.Request) (*llmfleet.Response, error) {
		close(started)
		<-ctx.Done()
		done <- ctx.Err()
		return nil, ctx.Err()
	}}
	srv := &proxy.Server{Submitter: sub, PingInterval: time.Millisecond}
	client := newClient("http://127.0.0.1:1", option.WithMiddleware(anthropicmw.New(srv)))
	ctx, cancel := context.WithCancel(llmfleet.WithBudget(context.Background(), time.Hour))
	s := client.Messages.NewStreaming(ctx, userParams("x"))
	<-started
	s.Close()
	cancel()
	if err := <-done; err == nil {
		t.Fatal("the batched request was not canceled")
	}
}
