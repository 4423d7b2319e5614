package openaimw_test

import (
	"context"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/middleware/openaimw"
	"github.com/llmfleet/llmfleet/proxy"
)

// A client whose chat completions, responses and embeddings with a budget
// in their context are routed by llmfleet (sync, flex or batch): a
// Submitter (a dispatch.Dispatcher) decides; without one, as here, every
// call goes on sync.
func ExampleNew() {
	srv := &proxy.Server{}
	client := openai.NewClient(option.WithMiddleware(openaimw.New(srv)))
	ctx := llmfleet.WithBudget(context.Background(), 10*time.Minute)
	_, _ = ctx, client
}
