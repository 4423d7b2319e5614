package gemini_test

import (
	"errors"
	"fmt"
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

// serve starts em behind a recorder of the last request's headers.
func serve(t *testing.T, em *geminiemu.Server) (*gemini.Provider, *atomic.Pointer[http.Request]) {
	var last atomic.Pointer[http.Request]
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		last.Store(r.Clone(r.Context()))
		em.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return &gemini.Provider{BaseURL: srv.URL, HTTPClient: srv.Client(), Clock: em.Clock}, &last
}

const body = `{"contents":[{"role":"user","parts":[{"text":"hello there"}]}]}`

// TestSendFlex: a flex call carries serviceTier flex and reports the tier
// served; a shed one is an unbilled ErrFlexUnavailable with its RetryInfo;
// the model may come from the endpoint; llmfleet's headers stay home.
func TestSendFlex(t *testing.T) {
	var shed atomic.Int32
	em := &geminiemu.Server{Keys: []string{"k"}, RetryDelay: 48 * time.Second, Shed: func(string) int { return int(shed.Load()) }}
	p, last := serve(t, em)
	req := &llmfleet.Request{Provider: gemini.Name, Credential: llmfleet.Credential{APIKey: "k"}, Flex: true,
		Endpoint: "/v1beta/models/gemini-2.5-flash:generateContent", Body: []byte(body),
		Header: http.Header{"Llmfleet-Client": {"me"}, "X-Goog-User-Project": {"p1"}}}
	resp, err := p.Send(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Tier != llmfleet.TierFlex || resp.Model != "gemini-2.5-flash" || resp.Usage.OutputTokens != 3*4 {
		t.Errorf("flex answer: tier %q model %q usage %+v", resp.Tier, resp.Model, resp.Usage)
	}
	h := last.Load().Header
	if h.Get("Llmfleet-Client") != "" || h.Get("X-Goog-User-Project") != "p1" || h.Get("X-Goog-Api-Key") != "k" {
		t.Errorf("headers sent %v", h)
	}
	for _, code := range []int{503, 429} {
		shed.Store(int32(code))
		_, err = p.Send(t.Context(), req)
		var pe *llmfleet.Error
		if !errors.Is(err, llmfleet.ErrFlexUnavailable) || !errors.As(err, &pe) || pe.StatusCode != code || pe.RetryAfter != 48*time.Second {
			t.Errorf("shed %d: %v", code, err)
		}
		_, err = p.Stream(t.Context(), req)
		if !errors.Is(err, llmfleet.ErrFlexUnavailable) {
			t.Errorf("shed stream %d: %v", code, err)
		}
	}
	req.Flex = false // a standard call is never shed, and never flex
	if resp, err := p.Send(t.Context(), req); err != nil || resp.Tier != llmfleet.TierStandard {
		t.Errorf("standard: %+v, %v", resp, err)
	}
	if em.Stats().Shed != 4 {
		t.Errorf("shed %d", em.Stats().Shed)
	}
	req.Body = []byte(`{"model":"gemini-2.5-pro","contents":[]}`)
	if _, err := p.Send(t.Context(), req); err == nil || !strings.Contains(err.Error(), "does not match") {
		t.Errorf("two models: %v", err)
	}
}

// TestFileBatch: a batch over the inline limit goes as a file; its
// results come from the responses file, by key.
func TestFileBatch(t *testing.T) {
	clock := providertest.NewManualClock(time.Date(2026, 8, 1, 9, 0, 0, 0, time.UTC))
	em := &geminiemu.Server{Clock: clock}
	p, _ := serve(t, em)
	p.InlineBytes = 100
	cred := llmfleet.Credential{APIKey: "k"}
	var items []llmfleet.BatchItem
	for i := range 3 {
		items = append(items, llmfleet.BatchItem{CustomID: fmt.Sprintf("t-%d", i),
			Params: []byte(fmt.Sprintf(`{"model":"gemini-2.5-flash","contents":[{"parts":[{"text":"q%d"}]}]}`, i))})
	}
	items[2].Params = []byte(`{"model":"gemini-2.5-flash","contents":[{"parts":[{"text":"x [error:RESOURCE_EXHAUSTED]"}]}]}`)
	b, err := p.CreateBatch(t.Context(), cred, "t", nil, items)
	if err != nil {
		t.Fatal(err)
	}
	if st := em.Stats(); st.Requests["/upload/v1beta/files"] != 2 {
		t.Errorf("uploads %v", st.Requests)
	}
	clock.Advance(time.Hour)
	got := map[string]llmfleet.BatchResult{}
	if err := p.Results(t.Context(), cred, b.ID, func(r llmfleet.BatchResult) error { got[r.CustomID] = r; return nil }); err != nil {
		t.Fatal(err)
	}
	if got["t-0"].Type != llmfleet.ResultSucceeded || got["t-1"].Usage.OutputTokens == 0 || got["t-2"].Type != llmfleet.ResultErrored ||
		got["t-2"].Error.StatusCode != 429 || got["t-2"].Error.Type != geminiwire.StatusResourceExhausted {
		t.Errorf("results %+v", got)
	}
}

// TestExpiredBatch: a batch the API let expire ends with expired results
// and counts.
func TestExpiredBatch(t *testing.T) {
	clock := providertest.NewManualClock(time.Date(2026, 8, 1, 9, 0, 0, 0, time.UTC))
	em := &geminiemu.Server{Clock: clock, BatchTurnaround: 100 * time.Hour}
	p, _ := serve(t, em)
	cred := llmfleet.Credential{AuthToken: "k"} // sent as a Bearer token, which the emulator does not take
	if _, err := p.CreateBatch(t.Context(), cred, "t", nil, []llmfleet.BatchItem{{CustomID: "a", Params: []byte(`{"model":"gemini-2.5-flash"}`)}}); err == nil {
		t.Error("a bearer token accepted by the emulator")
	}
	cred = llmfleet.Credential{APIKey: "k"}
	b, err := p.CreateBatch(t.Context(), cred, "t", nil, []llmfleet.BatchItem{{CustomID: "a",
		Params: []byte(`{"model":"gemini-2.5-flash","contents":[{"parts":[{"text":"q"}]}]}`)}})
	if err != nil {
		t.Fatal(err)
	}
	if b.ExpiresAt.Sub(b.CreatedAt) != 48*time.Hour {
		t.Errorf("expires %v", b.ExpiresAt)
	}
	clock.Advance(49 * time.Hour)
	b, err = p.GetBatch(t.Context(), cred, b.ID)
	if err != nil || b.Status != llmfleet.BatchEnded || b.Counts.Expired != 1 || b.Counts.Total() != 1 {
		t.Fatalf("expired batch %+v, %v", b, err)
	}
}

// TestUpstreamTimeout: the Provider states a flex tier's upstream timeout
// that outlasts the API's flex target, and a call's bound is the longer of
// it and the one configured (off stays off); the standard tier keeps the
// configured one.
func TestUpstreamTimeout(t *testing.T) {
	p := &gemini.Provider{}
	for _, c := range []struct {
		tier     llmfleet.Tier
		in, want time.Duration
	}{{llmfleet.TierFlex, 10 * time.Minute, gemini.FlexUpstreamTimeout}, {llmfleet.TierFlex, 30 * time.Minute, 30 * time.Minute},
		{llmfleet.TierFlex, -1, -1}, {llmfleet.TierStandard, 10 * time.Minute, 10 * time.Minute}} {
		if got := llmfleet.UpstreamTimeout(p, c.tier, c.in); got != c.want {
			t.Errorf("UpstreamTimeout(%s, %s) = %s, want %s", c.tier, c.in, got, c.want)
		}
	}
	if gemini.FlexUpstreamTimeout <= gemini.FlexTarget {
		t.Errorf("FlexUpstreamTimeout %s does not outlast FlexTarget %s", gemini.FlexUpstreamTimeout, gemini.FlexTarget)
	}
}
