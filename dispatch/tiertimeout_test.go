package dispatch

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/claude"
	"github.com/llmfleet/llmfleet/emulator"
)

// flexBounded is the Anthropic provider stating an upstream timeout of its
// own for its flex tier (llmfleet.TierTimeouts), as Gemini's does.
type flexBounded struct{ *claude.Provider }

func (flexBounded) UpstreamTimeout(tier llmfleet.Tier) time.Duration {
	if tier == llmfleet.TierFlex {
		return 20 * time.Minute
	}
	return 0
}

// TestTierTimeoutBoundsFlexCalls: a flex call is bounded by the longer
// upstream timeout its provider states for the flex tier, not cut at
// Policy.UpstreamTimeout (answered after 15 minutes with a policy of 10);
// a sync call of the same provider keeps the policy's.
func TestTierTimeoutBoundsFlexCalls(t *testing.T) {
	st := &emuStack{clock: newStepClock(), slept: make(chan time.Duration, 4)}
	up := httptest.NewServer(&emulator.Server{Clock: emuClock{st: st}})
	t.Cleanup(up.Close)
	st.d = &Dispatcher{Providers: []llmfleet.Provider{flexBounded{&claude.Provider{BaseURL: up.URL, MaxRetries: -1}}},
		Clock: st.clock, Policy: Policy{UpstreamTimeout: 10 * time.Minute}, Observe: st.l.observe}
	if err := st.d.Open(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.d.Close(context.Background()) })
	slow := `{"model":"claude-haiku-4-5","max_tokens":50,"messages":[{"role":"user","content":"[slow:15m] patient"}]}`
	done := make(chan callAnswer, 1)
	go func() {
		resp, err := st.d.SubmitFlex(t.Context(), 0, &llmfleet.Request{Credential: llmfleet.Credential{APIKey: "sk-tier"}, Body: []byte(slow)})
		done <- callAnswer{resp, err}
	}()
	select {
	case <-st.slept:
	case <-time.After(guard):
		t.Fatal("the flex call never reached the upstream")
	}
	st.clock.Advance(11 * time.Minute) // past the policy's timeout
	st.clock.Advance(4 * time.Minute)  // the upstream answers
	if r := wait(t, done); r.err != nil || r.resp.Route != llmfleet.RouteFlex {
		t.Fatalf("flex call answered after 15 minutes: %+v %v", r.resp, r.err)
	}
	sync := st.submit(t, t.Context(), 0, slow)
	st.clock.Advance(10 * time.Minute)
	if r := wait(t, sync); !errors.Is(r.err, llmfleet.ErrUpstreamTimeout) {
		t.Fatalf("sync call after 10 minutes: %+v %v, want ErrUpstreamTimeout", r.resp, r.err)
	}
}
