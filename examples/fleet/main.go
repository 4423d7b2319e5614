// Command fleet runs N concurrent agents, each making two dependent turns
// (the second prompt contains the first answer) through the llmfleet
// dispatcher, and prints one JSON line with the dispatcher's stats. It exits
// non-zero if any agent failed.
//
//	llmfleet emulate --listen 127.0.0.1:8788 &
//	ANTHROPIC_API_KEY=test go run ./examples/fleet -anthropic-url http://127.0.0.1:8788 -n 40 -budget 10m -window 1s
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/claude"
	"github.com/llmfleet/llmfleet/dispatch"
)

func main() {
	url := flag.String("anthropic-url", "https://api.anthropic.com", "Anthropic API base URL")
	n := flag.Int("n", 10, "number of concurrent agents")
	budget := flag.Duration("budget", 10*time.Minute, "latency budget of every request")
	window := flag.Duration("window", 30*time.Second, "batch window")
	model := flag.String("model", "claude-haiku-4-5", "model")
	flag.Parse()
	key := os.Getenv("ANTHROPIC_API_KEY")
	if key == "" {
		fmt.Fprintln(os.Stderr, "fleet: set ANTHROPIC_API_KEY")
		os.Exit(2)
	}
	d := &dispatch.Dispatcher{
		Providers: []llmfleet.Provider{&claude.Provider{BaseURL: *url}},
		Policy:    dispatch.Policy{BatchWindow: *window},
	}
	if err := d.Open(); err != nil {
		fmt.Fprintln(os.Stderr, "fleet:", err)
		os.Exit(1)
	}
	ctx := context.Background()
	cred := llmfleet.Credential{APIKey: key}
	ask := func(prompt string) (string, llmfleet.Route, error) {
		body, _ := json.Marshal(map[string]any{
			"model": *model, "max_tokens": 256,
			"messages": []any{map[string]any{"role": "user", "content": prompt}},
		})
		resp, err := d.Submit(ctx, *budget, &llmfleet.Request{Provider: "anthropic", Credential: cred, Body: body})
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
		text := b.String()
		// Against the emulator, an answer names its own prompt.
		if strings.HasPrefix(text, "Answer to: ") && text != "Answer to: "+prompt {
			return "", "", fmt.Errorf("got someone else's answer: %q", text)
		}
		if text == "" {
			return "", "", fmt.Errorf("empty answer")
		}
		return text, resp.Route, nil
	}

	start := time.Now()
	var mu sync.Mutex
	routes := map[llmfleet.Route]int{}
	var failures []string
	var wg sync.WaitGroup
	for i := range *n {
		wg.Go(func() {
			first, r1, err := ask(fmt.Sprintf("Agent %d, turn 1: name a prime number.", i))
			if err == nil {
				var r2 llmfleet.Route
				_, r2, err = ask(fmt.Sprintf("Agent %d, turn 2: you said %q; now double it.", i, first))
				mu.Lock()
				routes[r1]++
				routes[r2]++
				mu.Unlock()
			}
			if err != nil {
				mu.Lock()
				failures = append(failures, fmt.Sprintf("agent %d: %v", i, err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	closeCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	_ = d.Close(closeCtx)
	out, _ := json.Marshal(struct {
		Agents  int                    `json:"agents"`
		Failed  int                    `json:"failed"`
		Routes  map[llmfleet.Route]int `json:"routes"`
		Elapsed string                 `json:"elapsed"`
		Stats   llmfleet.Stats         `json:"stats"`
	}{*n, len(failures), routes, time.Since(start).Round(time.Millisecond).String(), d.Stats()})
	fmt.Println(string(out))
	for _, f := range failures {
		fmt.Fprintln(os.Stderr, f)
	}
	if len(failures) > 0 {
		os.Exit(1)
	}
}
