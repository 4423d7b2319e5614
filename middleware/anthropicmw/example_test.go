package anthropicmw_test

import (
	"context"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/middleware/anthropicmw"
	"github.com/llmfleet/llmfleet/proxy"
)

// A client whose calls with a budget in their context are routed by
// llmfleet: a Submitter (a dispatch.Dispatcher) batches those that can
// wait; without one, as here, every call goes on sync.
func ExampleNew() {
	srv := &proxy.Server{}
	client := anthropic.NewClient(option.WithMiddleware(anthropicmw.New(srv)))
	ctx := llmfleet.WithBudget(context.Background(), 10*time.Minute)
	_, _ = ctx, client
}
