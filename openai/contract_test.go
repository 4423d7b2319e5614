package openai_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/openai"
	"github.com/llmfleet/llmfleet/openaiemu"
	"github.com/llmfleet/llmfleet/providertest"
)

// createFaults wraps the emulator with the faults of a batch create (POST
// /v1/batches) the contract suite injects: the connection dropped after
// the create was made, or after its request was read without making it,
// or one create answered with an error status.
type createFaults struct {
	next         http.Handler
	dropResponse atomic.Bool
	dropRequest  atomic.Bool
	failStatus   atomic.Int32
}

func (f *createFaults) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/batches" {
		f.next.ServeHTTP(w, r)
		return
	}
	switch {
	case f.dropRequest.CompareAndSwap(true, false):
		io.Copy(io.Discard, r.Body)
		hangUp(w)
	case f.dropResponse.CompareAndSwap(true, false):
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		f.next.ServeHTTP(httptest.NewRecorder(), r) // made, never answered
		hangUp(w)
	default:
		if status := f.failStatus.Swap(0); status != 0 {
			typ := "invalid_request_error"
			if status >= 500 {
				typ = "server_error"
			} else if status == http.StatusTooManyRequests {
				typ = "rate_limit_exceeded"
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(int(status))
			json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": "injected", "type": typ, "param": nil, "code": nil}})
			return
		}
		f.next.ServeHTTP(w, r)
	}
}

func hangUp(w http.ResponseWriter) {
	c, _, err := http.NewResponseController(w).Hijack()
	if err == nil {
		c.Close()
	}
}

func TestContract(t *testing.T) {
	providertest.Run(t, providertest.Harness{
		Wire: providertest.OpenAIChat,
		New: func(t *testing.T) providertest.Env {
			clock := providertest.NewManualClock(time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC))
			em := &openaiemu.Server{Clock: clock, Keys: []string{"sk-contract-good"}}
			faults := &createFaults{next: em}
			srv := httptest.NewServer(faults)
			t.Cleanup(srv.Close)
			return providertest.Env{
				Provider: &openai.Provider{BaseURL: srv.URL, HTTPClient: srv.Client(),
					Clock: &waits{}}, // a refused create is retried at once
				Credential:         llmfleet.Credential{APIKey: "sk-contract-good"},
				BadCredential:      llmfleet.Credential{APIKey: "sk-contract-bad"},
				Advance:            clock.Advance,
				Clock:              clock,
				DropCreateResponse: func() { faults.dropResponse.Store(true) },
				DropCreateRequest:  func() { faults.dropRequest.Store(true) },
				FailCreate:         func(status int) { faults.failStatus.Store(int32(status)) },
			}
		},
		Answer: func(body []byte) string {
			var b struct {
				Messages []struct {
					Role    string `json:"role"`
					Content string `json:"content"`
				} `json:"messages"`
			}
			if err := json.Unmarshal(body, &b); err != nil {
				t.Errorf("a request body: %v", err)
			}
			last := ""
			for _, m := range b.Messages {
				if m.Role == "user" {
					last = m.Content
				}
			}
			return "Answer to: " + strings.TrimSpace(last)
		},
		ErrorPrompt: func(typ string) string { return "please fail [error:" + typ + "]" },
	})
}
