package proxy_test

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/geminiemu"
	"github.com/llmfleet/llmfleet/proxy"
)

// TestGeminiFaceFlexTierTimeout: a Gemini flex call is bounded by the
// upstream timeout the provider states for the flex tier
// (Server.TierTimeout), not the Server's shorter one: answered after 12
// minutes with an upstream timeout of 10. A standard call keeps the
// Server's, and is cut at 10 minutes.
func TestGeminiFaceFlexTierTimeout(t *testing.T) {
	clock := newManualClock()
	held, quit := make(chan struct{}, 4), make(chan struct{})
	var wait atomic.Int64 // how long the upstream holds a call
	wait.Store(int64(12 * time.Minute))
	emu := &geminiemu.Server{Fault: func(path string) int {
		if !strings.HasSuffix(path, ":generateContent") {
			return 0
		}
		done := make(chan struct{})
		clock.AfterFunc(time.Duration(wait.Load()), func() { close(done) })
		held <- struct{}{}
		select {
		case <-done:
		case <-quit:
		}
		return 0
	}}
	srv := &proxy.Server{Clock: clock, UpstreamTimeout: 10 * time.Minute,
		TierTimeout: func(provider string, tier llmfleet.Tier) time.Duration {
			if provider == "gemini" && tier == llmfleet.TierFlex {
				return 20 * time.Minute
			}
			return 0
		}}
	st := newGeminiStack(t, emu, srv)
	t.Cleanup(func() { close(quit) }) // first: the held calls end before the servers close
	post := func(route string) <-chan syncAnswer {
		req, _ := http.NewRequest("POST", st.ts.URL+"/gemini/v1beta/models/gemini-2.5-flash:generateContent?key=k1",
			strings.NewReader(`{"contents":[{"role":"user","parts":[{"text":"`+geminiPrompt+`"}]}]}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(proxy.HeaderRoute, route)
		return sendHeld(t, held, func() (*http.Response, string, error) { return doRead(st.ts.Client(), req) })
	}
	done := post("flex")
	clock.Advance(11 * time.Minute)
	clock.Advance(time.Minute)
	a := awaitAnswer(t, done)
	if a.resp.StatusCode != http.StatusOK || !strings.Contains(a.body, geminiAnswer) || a.resp.Header.Get("X-Gemini-Service-Tier") != "flex" {
		t.Fatalf("flex call after 12 minutes: %d %s", a.resp.StatusCode, a.body)
	}
	done = post("sync")
	clock.Advance(10 * time.Minute)
	a = awaitAnswer(t, done)
	if a.resp.StatusCode != http.StatusGatewayTimeout || !strings.Contains(a.body, "--upstream-timeout) of 10m0s") {
		t.Fatalf("standard call after 10 minutes: %d %s", a.resp.StatusCode, a.body)
	}
	// A flex call is cut at its tier's bound, which its 504 names.
	wait.Store(int64(time.Hour))
	done = post("flex")
	clock.Advance(20 * time.Minute)
	a = awaitAnswer(t, done)
	if a.resp.StatusCode != http.StatusGatewayTimeout || !strings.Contains(a.body, "--upstream-timeout) of 20m0s") {
		t.Fatalf("flex call after 20 minutes: %d %s", a.resp.StatusCode, a.body)
	}
}
