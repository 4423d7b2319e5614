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
// its answer back, reading its usage for the ledger.
func (s *Server) serveOpenAISync(w http.ResponseWriter, r *http.Request, c *openAICall) {
	ctx := r.Context()
	if c.budget > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, c.arrived.Add(c.budget))
		defer cancel()
	}
	body := []byte(c.req.Body)
	res, served, err := s.openAIUpstreamCall(ctx, r, c, body)
	if err != nil {
		status, typ, msg := http.StatusBadGateway, "api_error", "The upstream OpenAI API could not be reached."
		if ctx.Err() != nil && r.Context().Err() == nil {
			status, typ, msg = http.StatusGatewayTimeout, "timeout_error", "The request's latency budget ran out before the upstream answered."
		}
		s.reportOpenAI(c, served, nil, typ)
		writeOpenAIError(w, status, typ, "", "", msg)
		return
	}
	if c.owner != "" && res.StatusCode == http.StatusOK {
		res.Body = s.ownedResponses(r.Context(), c.owner, res)
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
	buf := make([]byte, 32<<10)
	flusher, _ := w.(http.Flusher)
	for {
		n, rerr := res.Body.Read(buf)
		if n > 0 {
			tap.write(buf[:n])
			if _, werr := w.Write(buf[:n]); werr != nil {
				break
			}
			if tap.sse && flusher != nil {
				flusher.Flush()
			}
		}
		if rerr != nil {
			break
		}
	}
	outcome := "ok"
	if res.StatusCode >= 400 {
		outcome = openaiwire.ErrorOf(res.StatusCode, tap.raw.Bytes(), "").Type
	}
	s.reportOpenAI(c, served, tap, outcome)
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
			deadline, has := ctx.Deadline()
			if !has || s.clock.Now().Add(wait+openAIStandardReserve).Before(deadline) {
				tick, stop := s.after(wait)
				select {
				case <-tick:
				case <-ctx.Done():
					stop()
					return nil, llmfleet.TierFlex, ctx.Err()
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

// reportOpenAI hands the ledger entry of a sync or flex call to Observe.
func (s *Server) reportOpenAI(c *openAICall, asked llmfleet.Tier, tap *openAITap, outcome string) {
	if s.Observe == nil {
		return
	}
	now := s.clock.Now()
	e := llmfleet.LedgerEntry{Time: now, Provider: openAIProvider, Model: c.model, Route: c.route, Outcome: outcome,
		Latency: now.Sub(c.arrived), Budget: c.budget, Client: c.req.Client}
	if tap != nil && outcome == "ok" {
		a := tap.result()
		e.Usage, e.Tier = a.Usage, a.Tier
		if a.Model != "" {
			e.Model = a.Model
		}
		if e.Tier == "" {
			e.Tier = asked
		}
	}
	e.BudgetMet = llmfleet.BudgetMet(outcome == "ok", e.Latency, c.budget)
	s.Observe(e)
}
