package anthropicmw_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/llmfleet/llmfleet/middleware/anthropicmw"
	"github.com/llmfleet/llmfleet/proxy"
)

// A call without a budget goes on through the SDK's own client, its
// llmfleet-* headers dropped, and is answered with llmfleet-route: sync.
func TestSyncCall(t *testing.T) {
	var route string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		route = r.Header.Get(proxy.HeaderRoute)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}`)
	}))
	defer up.Close()
	client := anthropic.NewClient(option.WithBaseURL(up.URL), option.WithAPIKey("sk-a"), option.WithMaxRetries(0),
		option.WithMiddleware(anthropicmw.New(&proxy.Server{})))
	var hr *http.Response
	msg, err := client.Messages.New(context.Background(), anthropic.MessageNewParams{Model: "m", MaxTokens: 10,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hello"))}},
		option.WithHeader(proxy.HeaderRoute, "sync"), option.WithResponseInto(&hr))
	if err != nil || msg.Content[0].Text != "hi" {
		t.Fatalf("%+v %v", msg, err)
	}
	if hr.Header.Get(proxy.HeaderRoute) != "sync" || route != "" {
		t.Errorf("route answered %q, sent upstream %q", hr.Header.Get(proxy.HeaderRoute), route)
	}
}
