package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/llmfleet/llmfleet/emulator"
	"github.com/llmfleet/llmfleet/simulate"
)

// realRun runs the scaled workload through serve against the emulator.
func realRun(ctx context.Context, f *econFlags, r *econRun) (figures, error) {
	dir, err := os.MkdirTemp("", "llmfleet-economics-")
	if err != nil {
		return figures{}, err
	}
	defer os.RemoveAll(dir)
	bin := f.binary
	emuAddr, err := freeAddr()
	if err != nil {
		return figures{}, err
	}
	serveAddr, err := freeAddr()
	if err != nil {
		return figures{}, err
	}
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	emu, err := startProc(pctx, dir, "emulate", nil, bin, "emulate", "--listen", emuAddr, "--turnaround", r.turnSpec,
		"--latency", r.syncSpec, "--straggler", f.straggler, "--seed", strconv.FormatUint(f.seed, 10))
	if err != nil {
		return figures{}, err
	}
	defer func() { cancel(); emu.Wait() }()
	if err := waitUp(ctx, http.DefaultClient, "http://"+emuAddr+"/", true); err != nil {
		return figures{}, err
	}
	serveArgs := append([]string{"serve", "--listen", serveAddr, "--anthropic-url", "http://" + emuAddr,
		"--db", filepath.Join(dir, "llmfleet.db"), "--secret-file", filepath.Join(dir, "llmfleet.secret"),
		"--shutdown-timeout", "1s"}, policyArgs(r.pol)...)
	srv, err := startProc(pctx, dir, "serve", nil, bin, serveArgs...)
	if err != nil {
		return figures{}, err
	}
	defer func() { cancel(); srv.Wait() }()
	base := "http://" + serveAddr
	if err := waitUp(ctx, http.DefaultClient, base+"/readyz", false); err != nil {
		logs, _ := os.ReadFile(filepath.Join(dir, "serve.log"))
		return figures{}, fmt.Errorf("%w; serve log:\n%s", err, logs)
	}
	fig, err := drive(ctx, base, r.turns)
	if err != nil {
		return fig, err
	}
	stats, err := readStats(ctx, base)
	if err != nil {
		return fig, err
	}
	fig.CostUSD, fig.SavedUSD, fig.Rescued = stats.CostUSD, stats.SavedUSD, int(stats.Rescued)
	return fig, nil
}

// statsJSON is what the economics run reads of serve's stats.
type statsJSON struct {
	CostUSD  float64 `json:"cost_usd"`
	SavedUSD float64 `json:"saved_usd"`
	Rescued  int64   `json:"rescued"`
}

// readStats reads the stats of the serve at base.
func readStats(ctx context.Context, base string) (statsJSON, error) {
	var s statsJSON
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/llmfleet/v1/stats", nil)
	if err != nil {
		return s, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return s, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return s, fmt.Errorf("stats: %s", resp.Status)
	}
	return s, json.NewDecoder(bufio.NewReader(resp.Body)).Decode(&s)
}

// messageBody returns a request body for turn t: its model, max_tokens
// its output tokens, and a prompt padded so the emulator counts about its
// input tokens (the emulator's answer echoes the prompt, so the output
// reaches max_tokens when the prompt is at least as long).
func messageBody(t simulate.Turn) []byte {
	mk := func(n int) []byte {
		b, _ := json.Marshal(map[string]any{"model": t.Model, "max_tokens": max(t.OutputTokens, 1),
			"messages": []map[string]string{{"role": "user", "content": t.Agent + " turn " + strconv.Itoa(t.Turn) + " " + strings.Repeat("x", n)}}})
		return b
	}
	base, err := emulator.InputTokens(mk(0))
	if err != nil {
		return mk(0)
	}
	return mk(int(max(t.InputTokens-base, 0)) * 4)
}

// drive runs the agents against the proxy at base and counts routes,
// misses and errors.
func drive(ctx context.Context, base string, turns []simulate.Turn) (figures, error) {
	agents := map[string][]simulate.Turn{}
	var order []string
	for _, t := range turns {
		if _, ok := agents[t.Agent]; !ok {
			order = append(order, t.Agent)
		}
		agents[t.Agent] = append(agents[t.Agent], t)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	var (
		mu  sync.Mutex
		fig figures
		wg  sync.WaitGroup
	)
	start := time.Now()
	var lastAnswer time.Time
	for _, name := range order {
		ts := agents[name]
		wg.Go(func() {
			next := start
			for i, t := range ts {
				if i == 0 {
					next = start.Add(time.Duration(t.AtMS) * time.Millisecond)
				} else {
					next = next.Add(time.Duration(t.ThinkMS) * time.Millisecond)
				}
				if d := time.Until(next); d > 0 {
					select {
					case <-ctx.Done():
						return
					case <-time.After(d):
					}
				}
				route, status, lat, err := send(ctx, client, base, t)
				now := time.Now()
				next = now
				mu.Lock()
				fig.Requests++
				switch route {
				case "sync":
					fig.Sync++
				case "batch":
					fig.Batch++
				}
				budget := time.Duration(t.BudgetMS) * time.Millisecond
				if status == http.StatusGatewayTimeout || (t.BudgetMS > 0 && lat > budget) {
					fig.Misses++
				}
				if err != nil || status != http.StatusOK {
					fig.Errors++
				}
				if now.After(lastAnswer) {
					lastAnswer = now
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	fig.WallMS = lastAnswer.Sub(start).Milliseconds()
	return fig, ctx.Err()
}

// send posts turn t to the proxy at base and returns the route it
// took, its status and its latency.
func send(ctx context.Context, client *http.Client, base string, t simulate.Turn) (route string, status int, lat time.Duration, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/messages", strings.NewReader(string(messageBody(t))))
	if err != nil {
		return "", 0, 0, err
	}
	req.Header.Set("content-type", "application/json")
	req.Header.Set("anthropic-version", "2023-06-01")
	req.Header.Set("x-api-key", t.Key)
	if t.BudgetMS > 0 {
		req.Header.Set("llmfleet-latency-budget-ms", strconv.FormatInt(t.BudgetMS, 10))
	}
	began := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return "", 0, time.Since(began), err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.Header.Get("llmfleet-route"), resp.StatusCode, time.Since(began), nil
}
