// Package anthropicmw is the anthropic-sdk-go middleware of llmfleet: it
// routes an SDK's create-message calls by latency budget in process, as
// the proxy routes POST /v1/messages (see proxy.SDKRouter.Messages).
//
//	srv := &proxy.Server{Submitter: d}
//	client := anthropic.NewClient(option.WithMiddleware(anthropicmw.New(srv)))
//	msg, err := client.Messages.New(llmfleet.WithBudget(ctx, 10*time.Minute), params)
package anthropicmw

import (
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/llmfleet/llmfleet/proxy"
)

// New returns the middleware routing the create-message calls of the SDK
// through s (proxy.SDKRouter.Messages): a call routed sync goes on through
// the SDK's own HTTP client, a batched one is answered from its batch.
func New(s *proxy.Server) option.Middleware {
	return s.SDK().Messages
}
