package proxy

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
)

// cancelingExec is a flex executor that, as the engine's does, ends each
// attempt's context once the attempt returned, and goes standard after a
// refusal.
type cancelingExec struct{ attempts int }

func (x *cancelingExec) ExecuteFlex(ctx context.Context, _, _ string, _ time.Time, _ time.Duration, attempt func(context.Context) error) (bool, error) {
	x.attempts++
	actx, cancel := context.WithCancel(ctx)
	err := attempt(actx)
	cancel()
	if errors.Is(err, llmfleet.ErrFlexUnavailable) || errors.Is(err, llmfleet.ErrFlexUnsupported) {
		return false, nil
	}
	return err == nil, err
}

// An attempt's answer outlives the executor's context for the attempt: a
// stream whose headers came is read to its end after the context ended.
// A refusal goes to the standard tier; another error is passed on.
func TestFlexCallAnswerOutlivesAttempt(t *testing.T) {
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/refused":
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, `{"error":{"message":"Resource unavailable","type":"rate_limit_error","code":"resource_unavailable"}}`)
		case "/broken":
			w.WriteHeader(http.StatusInternalServerError)
			io.WriteString(w, `{"error":{"message":"boom","type":"server_error"}}`)
		default:
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: one\n\n")
			w.(http.Flusher).Flush()
			<-release
			io.WriteString(w, "data: two\n\n")
		}
	}))
	defer up.Close()
	get := func(path string) func(context.Context) (*http.Response, error) {
		return func(ctx context.Context) (*http.Response, error) {
			req, _ := http.NewRequestWithContext(ctx, "POST", up.URL+path, strings.NewReader("{}"))
			return http.DefaultTransport.RoundTrip(req)
		}
	}
	c := &openAICall{model: "m"}
	for _, tc := range []struct {
		attempt string
		tier    llmfleet.Tier
		want    string
	}{
		{"/stream", llmfleet.TierFlex, "data: one\n\ndata: two\n\n"},
		{"/refused", llmfleet.TierStandard, "data: one\n\ndata: two\n\n"},
		{"/broken", llmfleet.TierFlex, `{"error":{"message":"boom","type":"server_error"}}`},
	} {
		x := &cancelingExec{}
		res, tier, err := flexCall{exec: x, wire: openAIFlex(), c: c, attempt: get(tc.attempt), standard: get("/stream")}.run(context.Background())
		if err != nil || tier != tc.tier {
			t.Fatalf("%s: tier %q, err %v", tc.attempt, tier, err)
		}
		if strings.HasPrefix(tc.want, "data") {
			go func() { release <- struct{}{} }() // the rest, once the attempt's context ended
		}
		b, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil || string(b) != tc.want {
			t.Errorf("%s: answer %q, %v; want %q", tc.attempt, b, err, tc.want)
		}
	}
}
