// Command fleet runs N concurrent agents, each making two dependent turns
// (the second prompt contains the first answer) through the llmfleet
// dispatcher, and prints one JSON line with the dispatcher's stats. It exits
// non-zero if any agent failed.
//
//	llmfleet emulate --listen 127.0.0.1:8788 &
//	ANTHROPIC_API_KEY=test go run ./examples/fleet -anthropic-url http://127.0.0.1:8788 -n 40 -budget 10m -window 1s
//
// With -via lib (the default) the agents call dispatch.Dispatcher.Submit.
// With -via sdk they use the official Go SDK, github.com/anthropics/anthropic-sdk-go,
// with llmfleet's middleware (proxy.Server.Middleware) and the budget on
// the context (llmfleet.WithBudget); the route of each answer is read from
// its llmfleet-route response header. With -via proxy, -anthropic-url is a
// running "llmfleet serve" (itself in front of the API or the emulator): the
// agents use the official Go SDK pointed at it with the budget in the
// llmfleet-latency-budget-ms header, so the proxy's ledger and dashboard see
// every call; the JSON line then has no dispatcher stats (read them
// from the proxy's /llmfleet/v1/stats).
//
//	llmfleet serve --anthropic-url http://127.0.0.1:8788 &
//	ANTHROPIC_API_KEY=test go run ./examples/fleet -via proxy -anthropic-url http://127.0.0.1:8787 -budget 10m
//
// With -provider openai the agents call OpenAI's chat completions instead
// (OPENAI_API_KEY, -openai-url, -model gpt-5-mini by default, a model with
// a flex tier): through the openai adapter (-via lib, the engine routing
// sync, flex or batch by the price table and the budget), openai-go with
// llmfleet's OpenAIMiddleware (-via sdk), or openai-go against a running
// serve's OpenAI face (-via proxy, -openai-url http://127.0.0.1:8787/openai).
//
//	llmfleet emulate --openai-addr 127.0.0.1:8789 &
//	OPENAI_API_KEY=test go run ./examples/fleet -provider openai -openai-url http://127.0.0.1:8789 -budget 10m
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/claude"
	"github.com/llmfleet/llmfleet/dispatch"
	"github.com/llmfleet/llmfleet/middleware/anthropicmw"
	"github.com/llmfleet/llmfleet/proxy"
)

// config is the example's flags.
type config struct {
	provider        string // "anthropic" or "openai"
	url, key, model string
	via             string // "lib", "sdk" or "proxy"
	n               int
	budget, window  time.Duration
	poll, prior     time.Duration
}

func main() {
	var c config
	flag.StringVar(&c.provider, "provider", "anthropic", `"anthropic" or "openai"`)
	flag.StringVar(&c.url, "anthropic-url", "https://api.anthropic.com", "Anthropic API base URL")
	openaiURL := flag.String("openai-url", "https://api.openai.com", "OpenAI API base URL, without /v1 (with -via proxy: the serve's /openai)")
	flag.IntVar(&c.n, "n", 10, "number of concurrent agents")
	flag.DurationVar(&c.budget, "budget", 10*time.Minute, "latency budget of every request")
	flag.DurationVar(&c.window, "window", 30*time.Second, "batch window")
	flag.DurationVar(&c.poll, "poll", 0, "shortest and longest poll interval (0: the dispatcher's defaults)")
	flag.DurationVar(&c.prior, "prior", 0, "predicted batch turnaround before any is observed (0: the dispatcher's default)")
	flag.StringVar(&c.model, "model", "", "model (default claude-haiku-4-5, or gpt-5-mini with -provider openai)")
	flag.StringVar(&c.via, "via", "lib", `how agents call: "lib" (Dispatcher.Submit), "sdk" (anthropic-sdk-go with llmfleet's middleware) or "proxy" (anthropic-sdk-go against the llmfleet serve at -anthropic-url)`)
	flag.Parse()
	keyEnv := "ANTHROPIC_API_KEY"
	if c.provider == "openai" {
		keyEnv, c.url = "OPENAI_API_KEY", *openaiURL
	}
	c.key = os.Getenv(keyEnv)
	if c.key == "" {
		fmt.Fprintln(os.Stderr, "fleet: set "+keyEnv)
		os.Exit(2)
	}
	sum, err := run(context.Background(), c)
	if sum != nil {
		out, _ := json.Marshal(sum)
		fmt.Println(string(out))
		for _, f := range sum.failures {
			fmt.Fprintln(os.Stderr, f)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "fleet:", err)
		os.Exit(1)
	}
}

// summary is the one JSON line the example prints.
type summary struct {
	Agents   int                    `json:"agents"`
	Failed   int                    `json:"failed"`
	Routes   map[llmfleet.Route]int `json:"routes"`
	Elapsed  string                 `json:"elapsed"`
	Stats    *llmfleet.Stats        `json:"stats,omitempty"` // nil with -via proxy
	failures []string
}

// askFunc asks one question and returns the answer's text and route.
type askFunc func(prompt string) (string, llmfleet.Route, error)

// run runs the fleet and returns its summary; an error if any agent failed.
func run(ctx context.Context, c config) (*summary, error) {
	d := &dispatch.Dispatcher{
		Providers: []llmfleet.Provider{&claude.Provider{BaseURL: c.url}},
		Policy:    dispatch.Policy{BatchWindow: c.window, PollInterval: c.poll, MaxPollInterval: c.poll, TurnaroundPrior: c.prior},
	}
	if c.model == "" {
		c.model = "claude-haiku-4-5"
		if c.provider == "openai" {
			c.model = "gpt-5-mini"
		}
	}
	call, err := chooseAsk(ctx, c, d)
	if err != nil {
		return nil, err
	}
	if c.via != "proxy" {
		if err := d.Open(); err != nil {
			return nil, err
		}
	}
	start := time.Now()
	sum := runAgents(c.n, checked(call))
	if c.via != "proxy" {
		closeCtx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		_ = d.Close(closeCtx)
	}
	sum.Failed = len(sum.failures)
	sum.Elapsed = time.Since(start).Round(time.Millisecond).String()
	if c.via != "proxy" {
		st := d.Stats()
		sum.Stats = &st
	}
	if sum.Failed > 0 {
		return sum, fmt.Errorf("%d of %d agents failed", sum.Failed, c.n)
	}
	return sum, nil
}

// chooseAsk returns how the agents ask, by -provider and -via.
func chooseAsk(ctx context.Context, c config, d *dispatch.Dispatcher) (askFunc, error) {
	switch {
	case c.provider == "openai":
		return openAIAsk(ctx, c, d)
	case c.provider != "" && c.provider != "anthropic":
		return nil, fmt.Errorf("-provider %q: want anthropic or openai", c.provider)
	case c.via == "" || c.via == "lib":
		return libAsk(ctx, c, d), nil
	case c.via == "sdk":
		return sdkAsk(ctx, c, d)
	case c.via == "proxy":
		return proxyAsk(ctx, c), nil
	}
	return nil, fmt.Errorf("-via %q: want lib, sdk or proxy", c.via)
}

// checked wraps call with the checks of an answer: not empty, and,
// against the emulator, an answer to its own prompt.
func checked(call askFunc) askFunc {
	return func(prompt string) (string, llmfleet.Route, error) {
		text, route, err := call(prompt)
		if err != nil {
			return "", "", err
		}
		// Against the emulator, an answer names its own prompt.
		if strings.HasPrefix(text, "Answer to: ") && text != "Answer to: "+prompt {
			return "", "", fmt.Errorf("got someone else's answer: %q", text)
		}
		if text == "" {
			return "", "", fmt.Errorf("empty answer")
		}
		return text, route, nil
	}
}

// runAgents runs n agents at once, each asking two dependent turns, and
// returns the routes their answers came by and their failures.
func runAgents(n int, ask askFunc) *summary {
	sum := &summary{Agents: n, Routes: map[llmfleet.Route]int{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			first, r1, err := ask(fmt.Sprintf("Agent %d, turn 1: name a prime number.", i))
			if err == nil {
				mu.Lock()
				sum.Routes[r1]++
				mu.Unlock()
				var r2 llmfleet.Route
				if _, r2, err = ask(fmt.Sprintf("Agent %d, turn 2: you said %q; now double it.", i, first)); err == nil {
					mu.Lock()
					sum.Routes[r2]++
					mu.Unlock()
				}
			}
			if err != nil {
				mu.Lock()
				sum.failures = append(sum.failures, fmt.Sprintf("agent %d: %v", i, err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return sum
}

// libAsk asks through the dispatcher's Submit.
func libAsk(ctx context.Context, c config, d *dispatch.Dispatcher) askFunc {
	cred := llmfleet.Credential{APIKey: c.key}
	return func(prompt string) (string, llmfleet.Route, error) {
		body, _ := json.Marshal(map[string]any{
			"model": c.model, "max_tokens": 256,
			"messages": []any{map[string]any{"role": "user", "content": prompt}},
		})
		resp, err := d.Submit(ctx, c.budget, &llmfleet.Request{Provider: "anthropic", Credential: cred, Body: body})
		if err != nil {
			return "", "", err
		}
		var m struct {
			Content []struct{ Type, Text string } `json:"content"`
		}
		if err := json.Unmarshal(resp.Body, &m); err != nil {
			return "", "", err
		}
		var b strings.Builder
		for _, c := range m.Content {
			b.WriteString(c.Text)
		}
		return b.String(), resp.Route, nil
	}
}

// sdkAsk asks through the official Go SDK with llmfleet's middleware.
func sdkAsk(ctx context.Context, c config, d *dispatch.Dispatcher) (askFunc, error) {
	up, err := url.Parse(c.url)
	if err != nil {
		return nil, fmt.Errorf("-anthropic-url: %v", err)
	}
	srv := &proxy.Server{Submitter: d, Upstream: up}
	client := anthropic.NewClient(
		option.WithBaseURL(c.url),
		option.WithAPIKey(c.key),
		option.WithMiddleware(anthropicmw.New(srv)),
	)
	ctx = llmfleet.WithBudget(ctx, c.budget)
	return clientAsk(ctx, client, c.model), nil
}

// proxyAsk asks a running llmfleet serve at c.url through the official Go
// SDK, the budget in the llmfleet-latency-budget-ms header.
func proxyAsk(ctx context.Context, c config) askFunc {
	client := anthropic.NewClient(
		option.WithBaseURL(c.url),
		option.WithAPIKey(c.key),
		option.WithHeader(proxy.HeaderBudget, strconv.FormatInt(c.budget.Milliseconds(), 10)),
		option.WithRequestTimeout(c.budget+time.Minute),
	)
	return clientAsk(ctx, client, c.model)
}

// clientAsk asks through client, an official SDK client, and tells the route
// the answer came by (the llmfleet-route header).
func clientAsk(ctx context.Context, client anthropic.Client, model string) askFunc {
	return func(prompt string) (string, llmfleet.Route, error) {
		var raw *http.Response
		msg, err := client.Messages.New(ctx, anthropic.MessageNewParams{
			Model:     anthropic.Model(model),
			MaxTokens: 256,
			Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(prompt))},
		}, option.WithResponseInto(&raw))
		if err != nil {
			return "", "", err
		}
		var b strings.Builder
		for _, block := range msg.Content {
			b.WriteString(block.Text)
		}
		return b.String(), llmfleet.Route(raw.Header.Get(proxy.HeaderRoute)), nil
	}
}
