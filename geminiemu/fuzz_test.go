package geminiemu_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet/geminiemu"
	"github.com/llmfleet/llmfleet/geminiwire"
	"github.com/llmfleet/llmfleet/providertest"
)

// FuzzBodies: whatever body a model method gets, the emulator answers 200
// with JSON (or an event stream) or Google's envelope, and a batch it
// created ends with one answer per request.
func FuzzBodies(f *testing.F) {
	f.Add(uint8(0), []byte(hello))
	f.Add(uint8(1), []byte(`{"contents":[{"parts":[{"text":"a [error:UNAVAILABLE]"}]}],"serviceTier":"flex"}`))
	f.Add(uint8(2), []byte(`{"batch":{"displayName":"d","inputConfig":{"requests":{"requests":[{"request":`+hello+`},{"request":{"contents":[]}}]}}}}`))
	f.Add(uint8(2), []byte(`{"batch":{"displayName":"d","inputConfig":{"requests":{"requests":[{"request":[1]}]}}}}`))
	f.Add(uint8(0), []byte(`{"contents":[{"parts":[{"text":"x"}]}],"generationConfig":{"thinkingConfig":{"thinkingBudget":0,"includeThoughts":true}}}`))
	methods := []string{geminiwire.MethodGenerate, geminiwire.MethodStream, geminiwire.MethodBatch}
	f.Fuzz(func(t *testing.T, m uint8, body []byte) {
		method := methods[int(m)%len(methods)]
		clock := providertest.NewManualClock(time.Date(2026, 8, 1, 10, 0, 0, 0, time.UTC))
		em := &geminiemu.Server{Clock: clock}
		req := httptest.NewRequest(http.MethodPost, "/v1beta/models/gemini-2.5-flash:"+method+"?alt=sse&key=k", bytes.NewReader(body))
		rec := httptest.NewRecorder()
		em.ServeHTTP(rec, req)
		out := rec.Body.Bytes()
		if rec.Code != http.StatusOK {
			if s, ok := geminiwire.ParseError(out); !ok || s.Code != rec.Code {
				t.Fatalf("%s %q: %d %q", method, body, rec.Code, out)
			}
			return
		}
		if method != geminiwire.MethodBatch {
			return
		}
		var op geminiwire.Operation
		if err := json.Unmarshal(out, &op); err != nil {
			t.Fatalf("create answered %q", out)
		}
		clock.Advance(time.Hour)
		rec = httptest.NewRecorder()
		em.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1beta/"+op.Name+"?key=k", nil))
		json.Unmarshal(rec.Body.Bytes(), &op)
		if !op.Done || op.Response == nil || op.Response.InlinedResponses == nil {
			t.Fatalf("a batch of %q not ended with its answers: %s", body, rec.Body.Bytes())
		}
		if n := len(op.Response.InlinedResponses.InlinedResponses); int64(n) != int64(op.Metadata.BatchStats.RequestCount) {
			t.Fatalf("%d answers for %d requests", n, op.Metadata.BatchStats.RequestCount)
		}
	})
}
