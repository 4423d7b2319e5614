package proxy

import (
	"io"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/openaiwire"
	"github.com/llmfleet/llmfleet/sse"
)

// openAITap is the body of the answer to a sync or flex call of the
// OpenAI face: it passes every byte on as the reverse proxy reads it and
// reads the answer as it streams by: a JSON answer is kept whole up to a
// limit and, longer (many embeddings), has its top-level members model,
// usage and service_tier kept as they pass (an OpenAI answer's usage
// comes last), an event stream's usage,
// model and tier are read off the events that carry them: a chat
// stream's chunks (its last, under stream_options.include_usage), a
// /v1/responses stream's response.completed (or .incomplete, .failed),
// under its "response" (openaiwire.ReadStreamEvent).
type openAITap struct {
	rc     io.ReadCloser
	status int
	sse    bool
	eof    bool // the answer came whole
	json   answerKeeper
	events sse.Decoder
	answer openaiwire.Answer
	// failed is the error type of the event that ended a stream in
	// failure after its 200 (openaiwire.StreamFailure), if one did.
	failed string
}

func (t *openAITap) Read(p []byte) (int, error) {
	n, err := t.rc.Read(p)
	if n > 0 {
		t.write(p[:n])
	}
	if err == io.EOF {
		t.eof = true
	}
	return n, err
}

func (t *openAITap) Close() error { return t.rc.Close() }

// maxStreamEvent bounds the data of an event of a stream kept to read its
// usage: a /v1/responses stream's response.completed holds the whole
// answer (as a non-streamed answer would, which maxKept bounds), and it
// is the only one of its events that large that is kept; a longer one's
// usage is not read (the entry is then unpriced).
const maxStreamEvent = 4 << 20

func (t *openAITap) write(p []byte) {
	if !t.sse {
		if t.json.keys == nil {
			t.json.keys, t.json.limit = answerMembers, maxKept
		}
		t.json.write(p)
		return
	}
	if t.events.Emit == nil {
		t.events = sse.Decoder{MaxData: maxStreamEvent, Keep: openaiwire.StreamedAnswerEvent, Emit: t.event}
	}
	t.events.Write(p)
}

// answerMembers are the top-level members of a JSON answer the ledger
// reads (openaiwire.ReadAnswer).
var answerMembers = openaiwire.AnswerMembers

// event reads an event of a stream: the last model, tier and usage
// reported win.
func (t *openAITap) event(e sse.Event) {
	if f := openaiwire.StreamFailure(e.Data); f != "" {
		t.failed = f
	}
	a, err := openaiwire.ReadStreamEvent(e.Data)
	if err != nil {
		return
	}
	if a.Model != "" {
		t.answer.Model = a.Model
	}
	if a.Tier != "" {
		t.answer.Tier = a.Tier
	}
	if a.Usage != (llmfleet.Usage{}) {
		t.answer.Usage = a.Usage
	}
	if a.Status != "" { // a response's, with its id and mode
		t.answer.ID, t.answer.Status, t.answer.Background = a.ID, a.Status, a.Background
	}
}

func (t *openAITap) result() openaiwire.Answer {
	if !t.sse {
		a, _ := openaiwire.ReadAnswer(t.json.kept())
		return a
	}
	return t.answer
}

// openAI hands the ledger entry of a sync or flex call of the OpenAI face
// to Observe: the usage its answer's tap read (outcome ok, a stream that
// failed after its 200, or a caller gone during the answer), in the tier
// served or else asked. A call cut
// after it was sent (cut) and whose usage is not known has it estimated
// from its body (LedgerEntry.Estimated): the upstream may bill it.
func (o *syncObserver) openAI(c *openAICall, asked llmfleet.Tier, tap *openAITap, outcome string, cut bool) {
	if o.observe == nil {
		return
	}
	e := o.callEntry(openAIProvider, c, outcome)
	if tap != nil && (outcome == "ok" || cut || tap.failed != "") {
		a := tap.result()
		e.Usage, e.Tier = a.Usage, a.Tier
		if a.Model != "" {
			e.Model = a.Model
		}
	}
	o.handCall(c, e, asked, cut)
}

// callEntry starts the ledger entry of a sync or flex call c of a face
// (provider) that ended with outcome.
func (o *syncObserver) callEntry(provider string, c *call, outcome string) llmfleet.LedgerEntry {
	now := o.clock.Now()
	return llmfleet.LedgerEntry{Time: now, Provider: provider, Model: c.model, Route: c.route, Outcome: outcome,
		Latency: now.Sub(c.arrived), Budget: c.budget, Client: c.req.Client}
}

// givenUp records a flex attempt of c (an API of provider) that the flex
// executor gave up for the standard tier after it went upstream, where
// it may be billed: a rescue's part paid and not delivered
// (llmfleet.RescueLate), its usage estimated; the standard call that
// answers c is the rescue's (llmfleet.RescueSync).
func (o *syncObserver) givenUp(provider string, c *call) {
	c.rescued = true
	if o.observe == nil {
		return
	}
	e := o.callEntry(provider, c, "timeout_error")
	e.Route, e.Tier = llmfleet.RouteFlex, llmfleet.TierFlex
	o.observe(e.PaidUndelivered(len(c.req.Body)))
}

// handCall completes e, the entry of the sync or flex call c, and hands
// it to Observe: a call cut after it was sent (cut) whose usage is not
// known has it estimated from its body (LedgerEntry.Estimated: the
// upstream may bill it); an answered or cut call whose tier was not read
// is in the tier asked.
func (o *syncObserver) handCall(c *call, e llmfleet.LedgerEntry, asked llmfleet.Tier, cut bool) {
	if cut && e.Usage == (llmfleet.Usage{}) {
		e.Usage, e.Estimated = llmfleet.EstimatedUsage(int64(len(c.req.Body))), true
	}
	if e.Tier == "" && (e.Outcome == "ok" || cut) {
		e.Tier = asked
	}
	if c.rescued {
		e.Rescue = llmfleet.RescueSync
	}
	e.BudgetMet = llmfleet.BudgetMet(e.Outcome == "ok", e.Latency, c.budget)
	c.span.entry(&e)
	o.observe(e)
}
