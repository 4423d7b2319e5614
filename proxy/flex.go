package proxy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/openaiwire"
)

// This file runs the OpenAI face's flex calls, over HTTP and through the
// SDK middleware alike, through the engine's flex executor (the
// Submitter, a llmfleet.FlexExecutor): the proxy sends each attempt and
// reads how it ended; the engine decides, with the reserve its routing
// planned with, whether to retry, wait or give up for the standard tier.

// flexCall is one flex call of the OpenAI face: attempt sends it in the
// flex tier, standard in the standard one, each within the context given.
type flexCall struct {
	exec     llmfleet.FlexExecutor
	c        *openAICall
	attempt  func(context.Context) (*http.Response, error)
	standard func(context.Context) (*http.Response, error)
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
	answered, err := fc.exec.ExecuteFlex(ctx, openAIProvider, fc.c.model, fc.c.arrived, fc.c.budget,
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
// of the call's that actx cancels only until then.
func (fc flexCall) try(ctx, actx context.Context) (*http.Response, error) {
	rctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(actx, func() { cancel(context.Cause(actx)) })
	res, err := fc.attempt(rctx)
	if !stop() && err == nil { // actx ended as the answer came: too late
		res.Body.Close()
		err = context.Cause(actx)
	}
	if err != nil {
		cancel(nil)
		return nil, err
	}
	if res.StatusCode != http.StatusTooManyRequests && res.StatusCode != http.StatusBadRequest {
		res.Body = releasingBody{res.Body, func() { cancel(nil) }}
		if res.StatusCode/100 == 2 {
			return res, nil
		}
		return res, errPassOn
	}
	b, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	res.Body.Close()
	cancel(nil)
	if reason := openaiwire.Reason(res.StatusCode, b); reason != nil {
		return nil, reason
	}
	res.Body = io.NopCloser(bytes.NewReader(b)) // another error: passed on as it came
	return res, errPassOn
}
