package dispatch

// The tests of this file check the ledger of flex and sync calls that
// end otherwise than answered: what the provider may bill is there,
// priced in the tier sent, and nothing it cannot bill.

import (
	"errors"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/claude"
	"github.com/llmfleet/llmfleet/emulator"
	"github.com/llmfleet/llmfleet/pricing"
)

// pricedFlex opens a dispatcher over p, its entries priced by the
// default price table into l.
func pricedFlex(t *testing.T, p llmfleet.Provider, l *ledgerOf, pol Policy) *Dispatcher {
	pol.BatchMinSize = 1
	d := &Dispatcher{Providers: []llmfleet.Provider{p}, Observe: l.observe, Policy: pol, Prices: priced,
		Flex: func(string, string) bool { return true }, Price: priceDefault}
	if err := d.Open(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close(t.Context()) })
	return d
}

// TestFlexFallbackCutPricedStandard: a flex request refused the flex tier
// whose standard call is cut at its hard deadline is estimated in the
// standard tier it was sent in, not the flex one of its route.
func TestFlexFallbackCutPricedStandard(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.noFlex, f.sendDelay = true, 5*time.Minute
		var l ledgerOf
		d := pricedFlex(t, f, &l, Policy{HardDeadline: true})
		_, err := d.SubmitFlex(t.Context(), 2*time.Minute, req("k", "a"))
		es := l.all()
		if !errors.Is(err, llmfleet.ErrBudgetExceeded) || len(es) != 1 || es[0].PricedTier() != llmfleet.TierStandard {
			t.Fatalf("%v; %+v", err, es)
		}
	})
}

// TestFlexShedThenTimeoutNotBilled: a flex call whose every attempt was
// shed (429, not billed), cut by the upstream timeout while waiting to
// try again, is ledgered without usage: nothing was being answered.
func TestFlexShedThenTimeoutNotBilled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.flexRefusals = -1
		var l ledgerOf
		d := pricedFlex(t, f, &l, Policy{UpstreamTimeout: 10 * time.Second})
		_, err := d.SubmitFlex(t.Context(), time.Hour, req("k", "a")) // attempts at 0,1,3,7s; cut at 10s
		es := l.all()
		if !errors.Is(err, llmfleet.ErrUpstreamTimeout) || f.count("send") != f.count("flex") || len(es) != 1 ||
			es[0].Estimated || es[0].Usage != (llmfleet.Usage{}) {
			t.Fatalf("%v; %+v", err, es)
		}
	})
}

// TestFlexWouldHavePaidAtItsStart: what the sync route would have paid
// for a flex call is priced with the sync cache as it was when the call
// was sent, not when its answer came (a 5-minute entry alive then has
// lapsed after a 6-minute flex call).
func TestFlexWouldHavePaidAtItsStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.flexDelay = 6 * time.Minute // 1s: passes
		f.usage = func(bool) llmfleet.Usage {
			u := llmfleet.Usage{InputTokens: 10, CacheCreationInputTokens: 16_000, OutputTokens: 800}
			u.CacheCreation.Ephemeral1hInputTokens, u.CacheCreation.Ephemeral5mInputTokens = 10_000, 6_000
			return u
		}
		var l ledgerOf
		d := pricedFlex(t, f, &l, Policy{})
		cred := llmfleet.Credential{APIKey: "k"}
		u := llmfleet.Usage{InputTokens: 10, CacheCreationInputTokens: 11_500, OutputTokens: 800}
		u.CacheCreation.Ephemeral1hInputTokens, u.CacheCreation.Ephemeral5mInputTokens = 10_000, 1_500
		d.ObserveCache(&llmfleet.Request{Credential: cred, Body: agentTurn("h1", "c", 0)}, llmfleet.RouteSync, u, time.Now())
		if _, err := d.SubmitFlex(t.Context(), time.Hour, &llmfleet.Request{Credential: cred, Body: agentTurn("h1", "c", 1)}); err != nil {
			t.Fatal(err)
		}
		p, _ := pricing.Default().Lookup("anthropic", "claude-sonnet-4-6")
		want := (11_500*p.CacheRead + 4_500*p.CacheWrite5m + 10*p.Input + 800*p.Output) / 1e6
		if es := l.all(); len(es) != 1 || !near(es[0].OtherRouteUSD, want) {
			t.Fatalf("would have paid $%.6f, want $%.6f", es[0].OtherRouteUSD, want)
		}
	})
}

// TestSyncDroppedAfterWriteEstimated: a sync call the upstream carried out
// (and billed) before dropping the connection unanswered is estimated in
// the ledger: the provider may bill it.
func TestSyncDroppedAfterWriteEstimated(t *testing.T) {
	emu := &emulator.Server{}
	up := httptest.NewServer(emu)
	defer up.Close()
	emu.InjectFault(emulator.Fault{Endpoint: emulator.EndpointMessages, DropResponse: true})
	var l ledgerOf
	d := pricedFlex(t, &claude.Provider{BaseURL: up.URL, MaxRetries: -1}, &l, Policy{})
	_, err := d.SubmitSync(t.Context(), &llmfleet.Request{Credential: llmfleet.Credential{APIKey: "k"},
		Body: []byte(`{"model":"claude-test","max_tokens":100,"messages":[{"role":"user","content":"hi"}]}`)})
	es := l.all()
	if len(emu.Stats().Bills) != 1 || len(es) != 1 || (!es[0].Estimated && es[0].Usage == (llmfleet.Usage{})) {
		t.Fatalf("%v; billed %d; %+v", err, len(emu.Stats().Bills), es)
	}
}
