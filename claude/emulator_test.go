package claude_test

import (
	"encoding/json"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/claude"
	"github.com/llmfleet/llmfleet/emulator"
	"github.com/llmfleet/llmfleet/providertest"
)

// startEmulator returns an emulator and a provider talking to it, on one
// manual clock: the clock records the provider's waits, without waiting
// (the emulator waits only for a latency or a delay, which these tests
// do not set).
func startEmulator(t *testing.T) (*emulator.Server, *claude.Provider, *providertest.ManualClock) {
	t.Helper()
	clock := providertest.NewManualClock(time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC))
	em := &emulator.Server{Clock: clock}
	srv := httptest.NewServer(em)
	t.Cleanup(srv.Close)
	return em, &claude.Provider{BaseURL: srv.URL, HTTPClient: srv.Client(), Clock: clock}, clock
}

var emuCred = llmfleet.Credential{APIKey: "sk-ant-emulator"}

const emuBody = `{"model":"claude-sonnet-4-6","max_tokens":2000,"messages":[{"role":"user","content":"Plan a trip [tool]"}],` +
	`"thinking":{"type":"enabled","budget_tokens":1024},` +
	`"tools":[{"name":"search","description":"web search","input_schema":{"type":"object","properties":{"query":{"type":"string"}}}}]}`

// The Message reassembled from the emulator's stream equals the one the
// non-streaming call answers, which checks ReadMessage against an
// independent implementation of the wire format.
func TestReadMessageMatchesEmulator(t *testing.T) {
	_, p, _ := startEmulator(t)
	resp, err := p.Send(t.Context(), &llmfleet.Request{Credential: emuCred, Body: []byte(emuBody)})
	if err != nil {
		t.Fatal(err)
	}
	streamBody := emuBody[:len(emuBody)-1] + `,"stream":true}`
	rc, err := p.Stream(t.Context(), &llmfleet.Request{Credential: emuCred, Body: []byte(streamBody)})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	got, err := claude.ReadMessage(rc)
	if err != nil {
		t.Fatal(err)
	}
	var a, b map[string]any
	if err := json.Unmarshal(resp.Body, &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(got, &b); err != nil {
		t.Fatal(err)
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) != string(jb) {
		t.Errorf("streamed message\n%s\ndiffers from\n%s", jb, ja)
	}
}

func TestEmulatorStreamErrorEvent(t *testing.T) {
	em, p, _ := startEmulator(t)
	em.InjectFault(emulator.Fault{StreamError: true, StreamErrorAfter: 3})
	body := `{"model":"claude-sonnet-4-6","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"hi"}]}`
	rc, err := p.Stream(t.Context(), &llmfleet.Request{Credential: emuCred, Body: []byte(body)})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	_, err = claude.ReadMessage(rc)
	var e *llmfleet.Error
	if !errors.As(err, &e) || e.StatusCode != 529 || e.Type != "overloaded_error" {
		t.Errorf("err %v", err)
	}
}

func TestEmulatorRetryAfter(t *testing.T) {
	em, p, sl := startEmulator(t)
	em.InjectFault(emulator.Fault{Endpoint: emulator.EndpointMessages, Status: 429, RetryAfter: 3 * time.Second})
	em.InjectFault(emulator.Fault{Endpoint: emulator.EndpointMessages, Status: 529, RetryAfterMs: 250 * time.Millisecond})
	body := `{"model":"claude-sonnet-4-6","max_tokens":50,"messages":[{"role":"user","content":"hi"}]}`
	if _, err := p.Send(t.Context(), &llmfleet.Request{Credential: emuCred, Body: []byte(body)}); err != nil {
		t.Fatal(err)
	}
	if ds := sl.Slept(); len(ds) != 2 || ds[0] != 3*time.Second || ds[1] != 250*time.Millisecond {
		t.Errorf("sleeps %v", ds)
	}
	// A spend-cap 429 that forbids retries is returned at once.
	em.InjectFault(emulator.Fault{Endpoint: emulator.EndpointMessages, Status: 429, ShouldRetry: "false", ErrorCode: "enforced_spend_limit_reached"})
	_, err := p.Send(t.Context(), &llmfleet.Request{Credential: emuCred, Body: []byte(body)})
	var e *llmfleet.Error
	if !errors.As(err, &e) || e.StatusCode != 429 || e.RequestID == "" || len(sl.Slept()) != 2 {
		t.Errorf("err %v, sleeps %v", err, sl.Slept())
	}
	// A connection dropped after the body was sent is not retried.
	em.InjectFault(emulator.Fault{Endpoint: emulator.EndpointMessages, DropAfterBody: true})
	if _, err := p.Send(t.Context(), &llmfleet.Request{Credential: emuCred, Body: []byte(body)}); err == nil {
		t.Error("dropped Send succeeded")
	}
	if n := em.Stats().Calls[emulator.EndpointMessages]; n != 5 {
		t.Errorf("%d messages calls, want 5", n)
	}
}

// The emulator's create faults are classified as the package
// documentation says, and no request is ever submitted twice.
func TestEmulatorCreateFaults(t *testing.T) {
	for _, tc := range []struct {
		f         emulator.Fault
		uncertain bool // an *llmfleet.UncertainError
		answered  bool // UncertainError.Answered
		status    int  // of the *llmfleet.Error returned, if any
		submitted int  // requests the emulator holds
	}{
		{f: emulator.Fault{DropResponse: true}, uncertain: true, submitted: 2},
		{f: emulator.Fault{DropAfterBody: true}, uncertain: true},
		{f: emulator.Fault{Status: 529}, submitted: 2},
		{f: emulator.Fault{Status: 429, RetryAfter: time.Second}, submitted: 2},
		{f: emulator.Fault{Status: 400}, status: 400},
		{f: emulator.Fault{Status: 503}, uncertain: true, answered: true, status: 503},
		{f: emulator.Fault{Status: 503, ShouldRetry: "true"}, uncertain: true, answered: true, status: 503},
		{f: emulator.Fault{Status: 504}, uncertain: true, answered: true, status: 504},
	} {
		em, p, _ := startEmulator(t)
		tc.f.Endpoint = emulator.EndpointCreate
		em.InjectFault(tc.f)
		items := []llmfleet.BatchItem{
			{CustomID: "t-a", Params: []byte(`{"model":"claude-sonnet-4-6","max_tokens":5,"messages":[{"role":"user","content":"a"}]}`)},
			{CustomID: "t-b", Params: []byte(`{"model":"claude-sonnet-4-6","max_tokens":5,"messages":[{"role":"user","content":"b"}]}`)},
		}
		b, err := p.CreateBatch(t.Context(), emuCred, "t", nil, items)
		var ue *llmfleet.UncertainError
		var e *llmfleet.Error
		switch {
		case errors.As(err, &ue) != tc.uncertain || (tc.uncertain && ue.Answered != tc.answered):
			t.Errorf("%+v: err %v", tc.f, err)
		case tc.status != 0 && (!errors.As(err, &e) || e.StatusCode != tc.status):
			t.Errorf("%+v: err %v, want a %d", tc.f, err, tc.status)
		case !tc.uncertain && tc.status == 0 && (err != nil || b == nil):
			t.Errorf("%+v: err %v", tc.f, err)
		}
		st := em.Stats()
		if d := st.DuplicateParams(); len(d) != 0 || len(st.Submissions) != tc.submitted {
			t.Errorf("%+v: submissions %+v", tc.f, st.Submissions)
		}
		if b != nil && st.Submissions[0].BatchID != b.ID {
			t.Errorf("%+v: returned %s, submitted in %s", tc.f, b.ID, st.Submissions[0].BatchID)
		}
		if n := st.Calls[emulator.EndpointCreate]; tc.uncertain && n != 1 {
			t.Errorf("%+v: %d creates", tc.f, n)
		}
	}
}
