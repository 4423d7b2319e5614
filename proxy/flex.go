package proxy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/jsonmember"
	"github.com/llmfleet/llmfleet/openaiwire"
)

// This file runs the flex calls of every face (the OpenAI face's over
// HTTP and through the SDK middleware, the Gemini face's) through the
// engine's flex executor (the Submitter, a llmfleet.FlexExecutor): the
// proxy sends each attempt and reads how it ended; the engine decides,
// with the reserve its routing planned with, whether to retry, wait or
// give up for the standard tier. What differs between the APIs, how the
// tier is asked for and which answers are sheds or refusals of it, is the
// face's flexWire.

// flexWire is how a provider API takes flex calls.
type flexWire struct {
	// provider names the API to the flex executor.
	provider string
	// member is the body's member that asks for the tier ("service_tier"),
	// and value its JSON value.
	member, value string
	// reads reports whether an error answer of status may be a shed or a
	// refusal of the tier, to be read for reason.
	reads func(status int) bool
	// reason returns the executor's error of such an answer
	// (llmfleet.ErrFlexUnavailable, ErrFlexUnsupported), nil for another.
	reason func(status int, body []byte) error
}

// body returns b asking for the flex tier (b itself if it cannot be
// read as a JSON object).
func (fw flexWire) body(b []byte) []byte {
	flex, err := jsonmember.Set(b, fw.member, []byte(fw.value))
	if err != nil {
		return b
	}
	return flex
}

// openAIFlex is how the OpenAI API takes flex calls: service_tier "flex";
// a 429 for want of resources sheds, a 400 naming service_tier refuses.
func openAIFlex() flexWire {
	return flexWire{provider: openAIProvider, member: "service_tier", value: `"flex"`,
		reads:  func(st int) bool { return st == http.StatusTooManyRequests || st == http.StatusBadRequest },
		reason: openaiwire.Reason}
}

// flexCall is one flex call of a face: attempt sends it in the flex tier,
// standard in the standard one, each within the context given.
type flexCall struct {
	exec     llmfleet.FlexExecutor
	wire     flexWire
	c        *call
	attempt  func(context.Context) (*http.Response, error)
	standard func(context.Context) (*http.Response, error)
	// shed, if set, is told of an attempt answered with a shed or a
	// refusal of the tier, which is not billed; givenUp, of an attempt
	// the executor gave up after it went upstream, which may be.
	shed, givenUp func()
}

// gaveUp tells of an attempt given up after it went upstream.
func (fc flexCall) gaveUp() {
	if fc.givenUp != nil {
		fc.givenUp()
	}
}

// errPassOn marks an attempt answered with an error that is no refusal
// of the tier: it is passed on to the caller as it came.
var errPassOn = errors.New("flex attempt answered with an error to pass on")

// flexExecutor returns the engine's flex executor behind sub, or, if it
// has none, one that makes a single attempt.
func flexExecutor(sub llmfleet.Submitter) llmfleet.FlexExecutor {
	if x, ok := sub.(llmfleet.FlexExecutor); ok {
		return x
	}
	return oneAttempt{}
}

// oneAttempt is the flex executor of a proxy without an engine: one
// attempt, and the standard tier if it is refused.
type oneAttempt struct{}

func (oneAttempt) ExecuteFlex(ctx context.Context, _, _ string, _ time.Time, _ time.Duration, attempt func(context.Context) error) (bool, error) {
	err := attempt(ctx)
	if errors.Is(err, llmfleet.ErrFlexUnavailable) || errors.Is(err, llmfleet.ErrFlexUnsupported) {
		return false, nil
	}
	return err == nil, err
}

// run makes the call within ctx and returns the answer to pass on (any
// status) and the tier asked for on the last attempt.
func (fc flexCall) run(ctx context.Context) (*http.Response, llmfleet.Tier, error) {
	var res *http.Response
	answered, err := fc.exec.ExecuteFlex(ctx, fc.wire.provider, fc.c.model, fc.c.arrived, fc.c.budget,
		func(actx context.Context) error {
			var err error
			res, err = fc.try(ctx, actx)
			return err
		})
	switch {
	case answered, errors.Is(err, errPassOn):
		return res, llmfleet.TierFlex, nil
	case err != nil:
		return nil, llmfleet.TierFlex, err
	}
	res, err = fc.standard(ctx)
	return res, llmfleet.TierStandard, err
}

// try sends one attempt. The executor's context (actx) bounds the wait
// for its answer's headers, not the answer: the attempt runs in a context
// of the call's that actx cancels only until then. An answer the face's
// wire reads as a shed or a refusal of the tier is the executor's error;
// any other error answer is passed on as it came (errPassOn).
func (fc flexCall) try(ctx, actx context.Context) (*http.Response, error) {
	rctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(actx, func() { cancel(context.Cause(actx)) })
	res, err := fc.attempt(rctx)
	stopped := stop()
	// Given up by the executor (actx ended, not the call's own ctx: a
	// call cut, by its hard deadline or its caller leaving, is the call's
	// entry alone), the attempt is the engine's to record as given up.
	givenUp := !stopped && ctx.Err() == nil
	if !stopped && err == nil { // actx ended as the answer came: too late
		res.Body.Close()
		if givenUp && res.StatusCode/100 == 2 { // answered, so billed
			fc.gaveUp()
		}
		err = context.Cause(actx)
	} else if givenUp { // given up while the upstream had it
		fc.gaveUp()
	}
	if err != nil {
		cancel(nil)
		return nil, err
	}
	if !fc.wire.reads(res.StatusCode) {
		res.Body = releasingBody{res.Body, func() { cancel(nil) }}
		if res.StatusCode/100 == 2 {
			return res, nil
		}
		return res, errPassOn
	}
	b, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	res.Body.Close()
	cancel(nil)
	if reason := fc.wire.reason(res.StatusCode, b); reason != nil {
		if fc.shed != nil {
			fc.shed()
		}
		return nil, reason
	}
	res.Body = io.NopCloser(bytes.NewReader(b)) // another error: passed on as it came
	return res, errPassOn
}
