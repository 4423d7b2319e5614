package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/dispatch"
	"github.com/llmfleet/llmfleet/middleware/openaimw"
	oai "github.com/llmfleet/llmfleet/openai"
	"github.com/llmfleet/llmfleet/pricing"
	"github.com/llmfleet/llmfleet/proxy"
)

// openAIAsk returns the askFunc of the OpenAI agents, by c.via, and sets
// the dispatcher up for OpenAI: its adapter, and the price table's flex
// models.
func openAIAsk(ctx context.Context, c config, d *dispatch.Dispatcher) (askFunc, error) {
	d.Providers = []llmfleet.Provider{&oai.Provider{BaseURL: c.url}}
	d.Flex = pricing.Default().Flex
	switch c.via {
	case "", "lib":
		cred := llmfleet.Credential{APIKey: c.key}
		return func(prompt string) (string, llmfleet.Route, error) {
			body, _ := json.Marshal(map[string]any{"model": c.model,
				"messages": []any{map[string]any{"role": "user", "content": prompt}}})
			resp, err := d.Submit(ctx, c.budget, &llmfleet.Request{Provider: "openai", Credential: cred, Body: body})
			if err != nil {
				return "", "", err
			}
			var cc openai.ChatCompletion
			if err := json.Unmarshal(resp.Body, &cc); err != nil || len(cc.Choices) == 0 {
				return "", "", fmt.Errorf("not a chat completion: %s", resp.Body)
			}
			return cc.Choices[0].Message.Content, resp.Route, nil
		}, nil
	case "sdk":
		srv := &proxy.Server{Submitter: d}
		client := openai.NewClient(option.WithBaseURL(c.url+"/v1"), option.WithAPIKey(c.key),
			option.WithMiddleware(openaimw.New(srv)))
		return openAIClientAsk(llmfleet.WithBudget(ctx, c.budget), client, c.model), nil
	case "proxy":
		client := openai.NewClient(option.WithBaseURL(c.url+"/v1"), option.WithAPIKey(c.key),
			option.WithHeader(proxy.HeaderBudget, strconv.FormatInt(c.budget.Milliseconds(), 10)),
			option.WithRequestTimeout(c.budget+time.Minute))
		return openAIClientAsk(ctx, client, c.model), nil
	}
	return nil, fmt.Errorf("-via %q: want lib, sdk or proxy", c.via)
}

// openAIClientAsk asks through an openai-go client and tells the route the
// answer came by (the llmfleet-route header).
func openAIClientAsk(ctx context.Context, client openai.Client, model string) askFunc {
	return func(prompt string) (string, llmfleet.Route, error) {
		var raw *http.Response
		res, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: model,
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)}}, option.WithResponseInto(&raw))
		if err != nil {
			return "", "", err
		}
		if len(res.Choices) == 0 {
			return "", "", fmt.Errorf("no choices")
		}
		return res.Choices[0].Message.Content, llmfleet.Route(raw.Header.Get(proxy.HeaderRoute)), nil
	}
}
