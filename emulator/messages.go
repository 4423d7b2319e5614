package emulator

import (
	"net/http"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/cachesim"
)

// handleMessages serves POST /v1/messages.
func (s *Server) handleMessages(c *call) {
	body, e := readBody(c, MaxMessageBytes)
	if e != nil {
		writeError(c.w, e, c.id)
		return
	}
	p, e := parseParams(body, modeSync)
	if e == nil {
		e = s.checkModel(p.model)
	}
	if e != nil {
		writeError(c.w, e, c.id)
		return
	}
	d := parseDirectives(p.lastUserText())
	if p.maxTokens == 0 {
		d = directives{} // a pre-warm generates nothing
	}
	ctx := c.r.Context()
	latency := s.Latency
	if s.SyncLatency != nil {
		latency = s.SyncLatency(p.model, s.rng("sync-latency", p.digest))
	}
	for _, wait := range [...]time.Duration{latency, d.slow} {
		if wait > 0 && llmfleet.Sleep(ctx, s.Clock, wait) != nil {
			return
		}
	}
	if d.errorType != "" {
		writeError(c.w, directiveError(d.errorType), c.id)
		return
	}
	fp, _ := promptBlocks(p) // validated by parseParams
	rep := buildReply(p)
	rep.model = s.answerModel(p.model)
	s.mu.Lock()
	now := s.now()
	s.advance(now)
	in := s.useCache(c.key, cachesim.Sync, fp, now, s.rng("cache", "sync", p.digest, c.id))
	u := makeUsage(in, rep.outputTokens, "standard")
	s.st.stats.bills = append(s.st.stats.bills, billOf(false, p, u))
	s.mu.Unlock()
	msg := rep.message(u)
	if p.stream {
		f, _ := s.takeFault(c.r.Method, c.r.URL.Path, c.endpoint, true)
		s.writeStream(c, p, msg, f)
		return
	}
	writeJSON(c.w, http.StatusOK, msg)
}

// handleCountTokens serves POST /v1/messages/count_tokens.
func (s *Server) handleCountTokens(c *call) {
	body, e := readBody(c, MaxMessageBytes)
	if e != nil {
		writeError(c.w, e, c.id)
		return
	}
	p, e := parseParams(body, modeCount)
	if e == nil {
		e = s.checkModel(p.model)
	}
	if e != nil {
		writeError(c.w, e, c.id)
		return
	}
	fp, _ := promptBlocks(p)
	writeJSON(c.w, http.StatusOK, map[string]int64{"input_tokens": max(fp.total, 1)})
}
