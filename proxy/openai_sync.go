package proxy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/jsonmember"
	"github.com/llmfleet/llmfleet/openaiwire"
	"github.com/llmfleet/llmfleet/sse"
)

// This file holds the OpenAI face's sync and flex routes: the call made
// upstream, its answer streamed back, its usage read for the ledger.

// serveOpenAISync makes the call upstream, flex or standard, and streams
// its answer back, reading its usage for the ledger. Its budget does not
// cut it unless it is a hard deadline (c.hard); the upstream timeout
// does, while no answer has come (deadline.go).
func (s *Server) serveOpenAISync(w http.ResponseWriter, r *http.Request, c *openAICall) {
	hard := time.Duration(0)
	if c.hard && c.budget > 0 {
		if hard = c.budget - s.clock.Now().Sub(c.arrived); hard <= 0 {
			s.reportOpenAI(c, "", nil, "timeout_error", false)
			writeOpenAIError(w, http.StatusGatewayTimeout, "timeout_error", "", "", s.cutMessage(callCutHard, c.budget, "upstream OpenAI API"))
			return
		}
	}
	ctx, b := s.bound(r.Context(), hard, s.upstreamTimeout)
	defer b.release()
	res, served, err := s.openAIUpstreamCall(ctx, r, c, []byte(c.req.Body))
	if err == nil && !b.answered() {
		res.Body.Close()
		err = errCut
	}
	if err != nil {
		s.openAICallFailed(w, r, c, served, b.cutBy())
		return
	}
	if c.owner != "" && res.StatusCode == http.StatusOK {
		res.Body = bookOf(s).ownedResponses(r.Context(), c.owner, res)
	}
	defer res.Body.Close()
	for k, vs := range res.Header {
		if k == "Content-Length" || strings.EqualFold(k, "Connection") {
			continue
		}
		w.Header()[k] = vs
	}
	w.Header().Set(HeaderRoute, string(c.route))
	if res.ContentLength >= 0 && !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		w.Header().Set("Content-Length", itoa(res.ContentLength))
	}
	w.WriteHeader(res.StatusCode)
	tap := &openAITap{sse: strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream")}
	whole := copyAnswer(w, res.Body, tap)
	switch {
	case res.StatusCode >= 400:
		s.reportOpenAI(c, served, tap, openaiwire.ErrorOf(res.StatusCode, tap.raw.Bytes(), "").Type, false)
	case !whole && r.Context().Err() != nil:
		// The caller left during the answer, which is billed all the same.
		s.reportOpenAI(c, served, tap, "caller_canceled", true)
	default:
		s.reportOpenAI(c, served, tap, "ok", false)
	}
}

// copyAnswer passes body on to w as it comes, through tap, and reports
// whether it came whole.
func copyAnswer(w http.ResponseWriter, body io.Reader, tap *openAITap) bool {
	buf := make([]byte, 32<<10)
	flusher, _ := w.(http.Flusher)
	for {
		n, rerr := body.Read(buf)
		if n > 0 {
			tap.write(buf[:n])
			if _, werr := w.Write(buf[:n]); werr != nil {
				return false
			}
			if tap.sse && flusher != nil {
				flusher.Flush()
			}
		}
		if rerr != nil {
			return rerr == io.EOF
		}
	}
}

// openAICallFailed answers and reports a sync or flex call that got no
// answer: cut by state (callCutHard, callCutTimeout: 504 timeout_error),
// left by its caller, or failed to reach the upstream (502). A call cut
// after it was sent may be billed: its usage is estimated.
func (s *Server) openAICallFailed(w http.ResponseWriter, r *http.Request, c *openAICall, served llmfleet.Tier, state int32) {
	switch {
	case state == callCutHard || state == callCutTimeout:
		s.log.Info("sync call cut before the upstream answered", "path", r.URL.Path, "route", c.route,
			"budget", c.budget, "upstream_timeout", state == callCutTimeout)
		s.reportOpenAI(c, served, nil, "timeout_error", true)
		writeOpenAIError(w, http.StatusGatewayTimeout, "timeout_error", "", "", s.cutMessage(state, c.budget, "upstream OpenAI API"))
	case r.Context().Err() != nil:
		s.reportOpenAI(c, served, nil, "caller_canceled", true)
	default:
		s.reportOpenAI(c, served, nil, "api_error", false)
		writeOpenAIError(w, http.StatusBadGateway, "api_error", "", "", "The upstream OpenAI API could not be reached.")
	}
}

// openAIUpstreamCall sends the call, in the flex tier on the flex route:
// a capacity refusal is retried while the budget leaves room for a
// standard call after the wait, a tier refusal goes standard at once. It
// returns the response to pass on (any status) and the route's tier asked
// for the last attempt.
func (s *Server) openAIUpstreamCall(ctx context.Context, r *http.Request, c *openAICall, body []byte) (*http.Response, llmfleet.Tier, error) {
	if c.route != llmfleet.RouteFlex {
		res, err := s.openAIPost(ctx, r, c, body)
		return res, llmfleet.TierStandard, err
	}
	flexBody, err := jsonmember.Set(body, "service_tier", []byte(`"flex"`))
	if err != nil {
		flexBody = body
	}
	fo, _ := s.Submitter.(llmfleet.FlexObserver)
	wait := s.FlexRetryBackoff
	if wait <= 0 {
		wait = time.Second
	}
	for {
		start := s.clock.Now()
		res, err := s.openAIPost(ctx, r, c, flexBody)
		if err != nil {
			return nil, llmfleet.TierFlex, err
		}
		if res.StatusCode != http.StatusTooManyRequests && res.StatusCode != http.StatusBadRequest {
			if fo != nil && res.StatusCode/100 == 2 {
				fo.ObserveFlex(openAIProvider, c.model, s.clock.Now().Sub(start), nil)
			}
			return res, llmfleet.TierFlex, nil
		}
		b, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
		res.Body.Close()
		reason := openaiwire.Reason(res.StatusCode, b)
		if reason == nil { // another error: pass it on as it came
			res.Body = io.NopCloser(bytes.NewReader(b))
			return res, llmfleet.TierFlex, nil
		}
		if fo != nil {
			fo.ObserveFlex(openAIProvider, c.model, s.clock.Now().Sub(start), reason)
		}
		if errors.Is(reason, llmfleet.ErrFlexUnavailable) {
			// A wait llmfleet adds: the budget bounds it.
			if c.budget <= 0 || s.clock.Now().Add(wait+openAIStandardReserve).Before(c.arrived.Add(c.budget)) {
				if err := llmfleet.Sleep(ctx, s.clock, wait); err != nil {
					return nil, llmfleet.TierFlex, err
				}
				wait = min(2*wait, 30*time.Second)
				continue
			}
		}
		res, err = s.openAIPost(ctx, r, c, body) // the standard tier
		return res, llmfleet.TierStandard, err
	}
}

// openAIStandardReserve is what a flex call's retries leave of its budget
// for the standard call after them.
const openAIStandardReserve = 30 * time.Second

// openAIPost posts body to the upstream endpoint with the client's headers
// (less llmfleet's own and hop-by-hop ones).
func (s *Server) openAIPost(ctx context.Context, r *http.Request, c *openAICall, body []byte) (*http.Response, error) {
	u := *s.openAIUpstream
	u.Path = strings.TrimSuffix(u.Path, "/") + c.endpoint
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	for k, vs := range r.Header {
		lk := strings.ToLower(k)
		if strings.HasPrefix(lk, "llmfleet-") || lk == "connection" || lk == "content-length" || lk == "host" || lk == "accept-encoding" {
			continue
		}
		req.Header[k] = vs
	}
	setCredential(req.Header, c.req.Credential) // the client's, or the proxy-held key
	return s.openAIClient.Do(req)
}

// openAITap reads an answer as it streams by: a JSON answer is kept whole
// up to a limit (an OpenAI answer's usage comes last), an event stream's
// usage, model and tier are read off its chunks.
type openAITap struct {
	sse    bool
	raw    bytes.Buffer
	events sse.Decoder
	answer openaiwire.Answer
}

func (t *openAITap) write(p []byte) {
	if !t.sse {
		if t.raw.Len()+len(p) <= maxKept {
			t.raw.Write(p)
		}
		return
	}
	if t.events.Emit == nil {
		t.events = sse.Decoder{MaxData: maxKept, Emit: func(e sse.Event) {
			if a, err := openaiwire.ReadAnswer(e.Data); err == nil {
				if a.Model != "" {
					t.answer.Model = a.Model
				}
				if a.Tier != "" {
					t.answer.Tier = a.Tier
				}
				if a.Usage != (llmfleet.Usage{}) {
					t.answer.Usage = a.Usage
				}
			}
		}}
	}
	t.events.Write(p)
}

func (t *openAITap) result() openaiwire.Answer {
	if !t.sse {
		a, _ := openaiwire.ReadAnswer(t.raw.Bytes())
		return a
	}
	return t.answer
}

// reportOpenAI hands the ledger entry of a sync or flex call to Observe:
// the usage its answer's tap read (outcome ok, or a caller gone during
// the answer), in the tier served or else asked. A call cut after it was
// sent (cut) and whose usage is not known has it estimated from its body
// (LedgerEntry.Estimated): the upstream may bill it.
func (s *Server) reportOpenAI(c *openAICall, asked llmfleet.Tier, tap *openAITap, outcome string, cut bool) {
	if s.Observe == nil {
		return
	}
	now := s.clock.Now()
	e := llmfleet.LedgerEntry{Time: now, Provider: openAIProvider, Model: c.model, Route: c.route, Outcome: outcome,
		Latency: now.Sub(c.arrived), Budget: c.budget, Client: c.req.Client}
	if tap != nil && (outcome == "ok" || cut) {
		a := tap.result()
		e.Usage, e.Tier = a.Usage, a.Tier
		if a.Model != "" {
			e.Model = a.Model
		}
	}
	if cut && e.Usage == (llmfleet.Usage{}) {
		e.Usage, e.Estimated = llmfleet.EstimatedUsage(int64(len(c.req.Body))), true
	}
	if e.Tier == "" && (outcome == "ok" || cut) {
		e.Tier = asked
	}
	e.BudgetMet = llmfleet.BudgetMet(outcome == "ok", e.Latency, c.budget)
	s.Observe(e)
}
