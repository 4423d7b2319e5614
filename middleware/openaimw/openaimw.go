// Package openaimw is the openai-go middleware of llmfleet: it routes an
// SDK's chat completions, responses and embeddings calls by latency
// budget in process, as the proxy's OpenAI face routes them (see
// proxy.SDKRouter.OpenAI).
//
//	srv := &proxy.Server{Submitter: d}
//	client := openai.NewClient(option.WithMiddleware(openaimw.New(srv)))
//	res, err := client.Chat.Completions.New(llmfleet.WithBudget(ctx, 10*time.Minute), params)
package openaimw

import (
	"github.com/openai/openai-go/v3/option"

	"github.com/llmfleet/llmfleet/proxy"
)

// New returns the middleware routing the SDK's routed calls through s
// (proxy.SDKRouter.OpenAI): sync and flex calls go on through the SDK's
// own HTTP client, a batched one is answered from its batch.
func New(s *proxy.Server) option.Middleware {
	return s.SDK().OpenAI
}
