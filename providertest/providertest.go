// Package providertest checks that an llmfleet.Provider behaves as the
// contract of that interface says, against an upstream the test controls,
// in the manner of testing/slogtest:
//
//	func TestContract(t *testing.T) {
//		providertest.Run(t, providertest.Harness{New: newEnv, Answer: answer})
//	}
//
// Run exercises Send, Stream, typed errors, the whole batch lifecycle
// (create, retrieve, list, results matched by custom_id with their usage
// and model, cancel) and the errored, canceled and expired result types.
// It checks what the engine reads of a request: Inspect's model and pool
// keys (equal for requests that differ only in their bodies, different
// for different anthropic-beta headers), and BatchParams, which drops
// "stream" and keeps every other byte. GetBatch must report the wait a
// running batch's answer asks for (Env.PollAfter) as its PollAfter, and
// none once the batch ended. Batches are created with a tag
// that begins every custom_id; FindBatch must find a batch by its tag once
// it ended, answer the batch or ErrUndetermined while it runs, nil for a
// tag never used, and never a batch created with another tag, including
// one whose tag begins alike. With the Env's fault hooks, a create whose
// answer was lost or whose request was dropped must fail with an
// *llmfleet.UncertainError and be settled by FindBatch; a create answered
// with a 5xx must be uncertain, and one refused with a 4xx or 529 must not
// be (it is retried or returned, and creates nothing more). Request and
// answer bodies are in the dialect of Harness.Wire: Anthropic's Messages
// by default, or OpenAI's chat completions; for OpenAI the pool keys must
// differ by organization and project rather than by anthropic-beta.
package providertest

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
)

// Harness tells Run how to reach a fresh upstream and what it answers.
type Harness struct {
	// New starts a fresh upstream, with no batches, and returns the
	// provider under test talking to it. It is called once per subtest;
	// cleanup goes through t.Cleanup. Required.
	New func(t *testing.T) Env

	// Wire is the dialect of the bodies; nil means Anthropic.
	Wire Wire

	// Model is the model named in request bodies. Empty means the Wire's
	// DefaultModel.
	Model string

	// Answer returns the text of the upstream's reply to a request body.
	// Nil means only that some text came back is checked.
	Answer func(body []byte) string

	// ErrorPrompt returns a user prompt that makes the upstream fail the
	// request with the given error type (one of the Wire's ErrorTypes):
	// at once on the synchronous API, as an errored result inside a
	// batch. Nil skips the checks that need it.
	ErrorPrompt func(errorType string) string

	// ExpirePrompt is a user prompt whose request the upstream leaves
	// unprocessed until its batch expires. Empty skips the check.
	ExpirePrompt string
}

// Env is one fresh upstream and the provider under test.
type Env struct {
	// Provider is the provider under test. Required.
	Provider llmfleet.Provider
	// Credential is a credential the upstream accepts. Required.
	Credential llmfleet.Credential
	// BadCredential is a non-empty credential the upstream rejects with an
	// authentication error. Zero skips that check.
	BadCredential llmfleet.Credential

	// Advance moves the upstream's clock forward by d, so that batches end
	// or expire without waiting. Nil skips the checks that need batches
	// to end.
	Advance func(d time.Duration)
	// Clock is the clock the engine reads to fill BatchQuery.Since before
	// a create. Nil means the real one.
	Clock llmfleet.Clock
	// PollAfter is the wait the upstream asks for (Retry-After) on the
	// retrieve of a batch not ended, 0 for none: GetBatch must report it
	// as the batch's PollAfter, and none once the batch ended.
	PollAfter time.Duration

	// DropCreateResponse makes the upstream create the next batch, then
	// drop the connection instead of answering: CreateBatch must return
	// an *llmfleet.UncertainError, and FindBatch find the batch. Nil skips
	// that check.
	DropCreateResponse func()
	// DropCreateRequest makes the upstream read the next batch create,
	// then drop the connection without creating anything: CreateBatch
	// must return an *llmfleet.UncertainError, and FindBatch find
	// nothing. Nil skips that check.
	DropCreateRequest func()
	// FailCreate makes the upstream answer the next batch create with an
	// error of the given HTTP status, of the type the upstream uses for
	// it, without creating anything. Nil skips that check.
	FailCreate func(status int)
}

// Run runs the contract suite as subtests of t.
func Run(t *testing.T, h Harness) {
	t.Helper()
	if h.New == nil {
		t.Fatal("providertest: Harness.New is nil")
	}
	s := &suite{h: h}
	t.Run("Identity", s.identity)
	t.Run("Send", s.send)
	t.Run("SendConcurrent", s.sendConcurrent)
	t.Run("SendErrors", s.sendErrors)
	t.Run("Stream", s.stream)
	t.Run("StreamErrors", s.streamErrors)
	t.Run("BatchLifecycle", s.batchLifecycle)
	t.Run("BatchResultsEarly", s.batchResultsEarly)
	t.Run("BatchList", s.batchList)
	t.Run("BatchCancel", s.batchCancel)
	t.Run("BatchNotFound", s.batchNotFound)
	t.Run("BatchCreateRejected", s.batchCreateRejected)
	t.Run("BatchCreateDroppedResponse", s.batchCreateDroppedResponse)
	t.Run("BatchCreateDroppedRequest", s.batchCreateDroppedRequest)
	t.Run("BatchCreateFailed", s.batchCreateFailed)
	t.Run("BatchFind", s.batchFind)
	t.Run("Inspect", s.inspect)
	t.Run("BatchParams", s.batchParams)
}

type suite struct{ h Harness }

func (s *suite) env(t *testing.T) Env {
	t.Helper()
	e := s.h.New(t)
	if e.Provider == nil || e.Credential.IsZero() {
		t.Fatal("providertest: Env needs a Provider and a Credential")
	}
	return e
}

func (e Env) now() time.Time {
	return llmfleet.Now(e.Clock)
}

func (s *suite) wire() Wire {
	if s.h.Wire != nil {
		return s.h.Wire
	}
	return Anthropic
}

func (s *suite) model() string {
	if s.h.Model != "" {
		return s.h.Model
	}
	return s.wire().DefaultModel()
}

// body returns a request body whose last user text is prompt. extra holds
// further top-level members, e.g. `"stream":true`.
func (s *suite) body(prompt string, extra ...string) []byte {
	return s.wire().Body(s.model(), prompt, extra...)
}

func (s *suite) request(e Env, body []byte) *llmfleet.Request {
	return &llmfleet.Request{Provider: e.Provider.Name(), Credential: e.Credential, Body: body}
}

// checkText checks that text is the upstream's answer to body.
func (s *suite) checkText(t *testing.T, body []byte, text string) {
	t.Helper()
	if s.h.Answer == nil {
		if text == "" {
			t.Errorf("empty answer to %s", body)
		}
		return
	}
	if want := s.h.Answer(body); text != want {
		t.Errorf("answer %q, want %q", text, want)
	}
}

// checkMessage decodes raw as an answer to body and checks it.
func (s *suite) checkMessage(t *testing.T, body []byte, raw json.RawMessage) Answer {
	t.Helper()
	a, err := s.wire().Answer(raw)
	if err != nil {
		t.Fatalf("answer: %v: %s", err, raw)
	}
	if a.Usage.OutputTokens <= 0 {
		t.Errorf("output tokens %d", a.Usage.OutputTokens)
	}
	s.checkText(t, body, a.Text)
	return a
}

// wantError checks that err is an *llmfleet.Error of the given status and
// type (type "" accepts any).
func wantError(t *testing.T, what string, err error, status int, typ string) *llmfleet.Error {
	t.Helper()
	var e *llmfleet.Error
	if !errors.As(err, &e) {
		t.Errorf("%s: got %v (%T), want an *llmfleet.Error %d %s", what, err, err, status, typ)
		return nil
	}
	if e.StatusCode != status || (typ != "" && e.Type != typ) {
		t.Errorf("%s: got error %d %s (%s), want %d %s", what, e.StatusCode, e.Type, e.Message, status, typ)
	}
	if e.Message == "" {
		t.Errorf("%s: error without a message", what)
	}
	return e
}

func ctx(t *testing.T) context.Context { return t.Context() }
