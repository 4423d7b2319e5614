package openaimw_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/llmfleet/llmfleet/middleware/openaimw"
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
		io.WriteString(w, `{"id":"c1","object":"chat.completion","created":1,"model":"gpt-4.1","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"hi"}}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
	}))
	defer up.Close()
	client := openai.NewClient(option.WithBaseURL(up.URL), option.WithAPIKey("sk-a"), option.WithMaxRetries(0),
		option.WithMiddleware(openaimw.New(&proxy.Server{})))
	var hr *http.Response
	res, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "gpt-4.1",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")}},
		option.WithHeader(proxy.HeaderRoute, "sync"), option.WithResponseInto(&hr))
	if err != nil || res.Choices[0].Message.Content != "hi" {
		t.Fatalf("%+v %v", res, err)
	}
	if hr.Header.Get(proxy.HeaderRoute) != "sync" || route != "" {
		t.Errorf("route answered %q, sent upstream %q", hr.Header.Get(proxy.HeaderRoute), route)
	}
}
