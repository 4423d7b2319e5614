package gemini_test

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
	"github.com/llmfleet/llmfleet/gemini"
	"github.com/llmfleet/llmfleet/geminiemu"
	"github.com/llmfleet/llmfleet/geminiwire"
	"github.com/llmfleet/llmfleet/providertest"
)

// createFaults wraps the emulator with the faults of a batch create (POST
// ...:batchGenerateContent) the contract suite injects: the connection
// dropped after the create was made, or after its request was read
// without making it, or one create answered with an error status.
type createFaults struct {
	next         http.Handler
	dropResponse atomic.Bool
	dropRequest  atomic.Bool
	failStatus   atomic.Int32
}

func (f *createFaults) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, ":"+geminiwire.MethodBatch) {
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
		if status := int(f.failStatus.Swap(0)); status != 0 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			w.Write(geminiwire.Envelope(status, "injected"))
			return
		}
		f.next.ServeHTTP(w, r)
	}
}

func hangUp(w http.ResponseWriter) {
	if c, _, err := http.NewResponseController(w).Hijack(); err == nil {
		c.Close()
	}
}

// newEnv starts a fresh emulator behind the create faults.
func newEnv(t *testing.T) providertest.Env {
	clock := providertest.NewManualClock(time.Date(2026, 8, 1, 9, 0, 0, 0, time.UTC)) // a retry's wait takes no time
	em := &geminiemu.Server{Clock: clock, Keys: []string{"AIza-contract-good"}}
	faults := &createFaults{next: em}
	srv := httptest.NewServer(faults)
	t.Cleanup(srv.Close)
	return providertest.Env{
		Provider:           &gemini.Provider{BaseURL: srv.URL, HTTPClient: srv.Client(), Clock: clock},
		Credential:         llmfleet.Credential{APIKey: "AIza-contract-good"},
		Advance:            clock.Advance,
		Clock:              clock,
		DropCreateResponse: func() { faults.dropResponse.Store(true) },
		DropCreateRequest:  func() { faults.dropRequest.Store(true) },
		FailCreate:         func(status int) { faults.failStatus.Store(int32(status)) },
	}
}

func TestContract(t *testing.T) { providertest.Run(t, harness(newEnv)) }

// TestContractFiles runs the suite with every batch sent as a file
// through the Files API, its results read from the responses file.
func TestContractFiles(t *testing.T) {
	providertest.Run(t, harness(func(t *testing.T) providertest.Env {
		e := newEnv(t)
		e.Provider.(*gemini.Provider).InlineBytes = 1
		return e
	}))
}

func harness(newEnv func(t *testing.T) providertest.Env) providertest.Harness {
	return providertest.Harness{
		Wire: providertest.Gemini,
		New:  newEnv,
		Answer: func(body []byte) string {
			var r geminiwire.GenerateContentRequest
			if json.Unmarshal(body, &r) != nil || len(r.Contents) == 0 {
				return "(not a request body)"
			}
			return "Answer to: " + r.Contents[len(r.Contents)-1].Text()
		},
		ErrorPrompt: func(status string) string { return "please fail [error:" + status + "]" },
	}
}
