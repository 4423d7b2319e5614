package proxy

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/geminiwire"
)

// maxGeminiTap bounds the bytes of a sync answer kept to read its usage
// from: a longer JSON answer's usage is not read (a stream keeps its
// tail, where the usage is).
const maxGeminiTap = 4 << 20

// geminiTap keeps what a sync answer's usage is read from as the answer
// is passed on: a JSON answer whole, a stream's last events.
type geminiTap struct {
	buf  bytes.Buffer // a stream's tail
	json answerKeeper // a JSON answer
	sse  bool
	// array says the answer is a stream as a JSON array of chunks
	// (streamGenerateContent without alt=sse): its tail is kept, as an
	// event stream's is.
	array bool
}

// geminiAnswerMembers are the top-level members of a JSON answer the
// ledger reads (geminiwire.ReadAnswer).
var geminiAnswerMembers = []string{"modelVersion", "usageMetadata"}

func (t *geminiTap) Write(p []byte) (int, error) {
	switch {
	case !t.sse && !t.array:
		if t.json.keys == nil {
			t.json.keys, t.json.limit = geminiAnswerMembers, maxGeminiTap
		}
		t.json.write(p)
	case t.buf.Len()+len(p) > maxGeminiTap:
		tail := append(t.buf.Bytes()[t.buf.Len()/2:], p...)
		t.buf.Reset()
		t.buf.Write(tail)
	default:
		t.buf.Write(p)
	}
	return len(p), nil
}

// kept returns what was kept of the answer: a stream's tail, or a JSON
// answer (answerKeeper).
func (t *geminiTap) kept() []byte {
	if t.sse || t.array {
		return t.buf.Bytes()
	}
	return t.json.kept()
}

// answer reads the model, usage and served tier of the answer kept.
func (t *geminiTap) answer() geminiwire.Answer {
	switch {
	case t.array:
		return tailAnswer(t.buf.Bytes())
	case !t.sse:
		a, _ := geminiwire.ReadAnswer(t.json.kept())
		return a
	}
	var a geminiwire.Answer
	for data := range t.events() {
		if got, err := geminiwire.ReadAnswer(data); err == nil {
			if got.Model != "" {
				a.Model = got.Model
			}
			if got.Usage != (llmfleet.Usage{}) {
				a.Usage, a.Tier = got.Usage, got.Tier
			}
		}
	}
	return a
}

// events yields the data of the events of a stream's tail kept.
func (t *geminiTap) events() func(yield func([]byte) bool) {
	return func(yield func([]byte) bool) {
		for ev := range strings.SplitSeq(t.buf.String(), "\n") {
			if data, ok := strings.CutPrefix(strings.TrimSpace(ev), "data:"); ok && !yield([]byte(strings.TrimSpace(data))) {
				return
			}
		}
	}
}

// streamError returns the status of the error event that ended an event
// stream after its 200 (the API's {"error": {...}} as an event's data),
// "" if none did.
func (t *geminiTap) streamError() string {
	if !t.sse {
		return ""
	}
	status := ""
	for data := range t.events() {
		if s, ok := geminiwire.ParseError(data); ok {
			status = s.Status
			if status == "" {
				status = geminiwire.StatusOf(s.Code)
			}
		}
	}
	return status
}

// tailAnswer reads the model and the last usage of the tail of a stream
// sent as a JSON array of chunks: each chunk's usage is the call's so
// far, so the last one found is the call's.
func tailAnswer(tail []byte) geminiwire.Answer {
	var a geminiwire.Answer
	if v := lastMember(tail, "modelVersion"); v != nil {
		json.Unmarshal(v, &a.Model)
	}
	if v := lastMember(tail, "usageMetadata"); v != nil {
		if got, err := geminiwire.ReadAnswer(append(append([]byte(`{"usageMetadata":`), v...), '}')); err == nil {
			a.Usage, a.Tier = got.Usage, got.Tier
		}
	}
	return a
}

// lastMember returns the value of the last member named key in b, a
// piece of JSON text, or nil if none is whole there.
func lastMember(b []byte, key string) []byte {
	quoted := []byte(`"` + key + `"`)
	for end := len(b); ; {
		i := bytes.LastIndex(b[:end], quoted)
		if i < 0 {
			return nil
		}
		rest := bytes.TrimLeft(b[i+len(quoted):], " \t\r\n")
		if len(rest) > 0 && rest[0] == ':' {
			var v json.RawMessage
			if json.NewDecoder(bytes.NewReader(rest[1:])).Decode(&v) == nil {
				return v
			}
		}
		end = i
	}
}

// geminiBody is the body of the answer to a sync or flex call of the
// Gemini face: it passes every byte on as the reverse proxy reads it,
// keeping what its usage is read from (geminiTap).
type geminiBody struct {
	rc     io.ReadCloser
	t      geminiTap
	status int
	served llmfleet.Tier // the tier its x-gemini-service-tier header names
	eof    bool          // the answer came whole
}

func (b *geminiBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if n > 0 {
		b.t.Write(p[:n])
	}
	if err == io.EOF {
		b.eof = true
	}
	return n, err
}

func (b *geminiBody) Close() error { return b.rc.Close() }

// modify is the Gemini face's ModifyResponse: the answer to a sync call
// is read as it streams by (geminiBody); an upload's session URL is
// pointed at the face (uploadURL).
func (g geminiForwarder) modify(resp *http.Response) error {
	gs := faceSyncOf(resp.Request)
	if gs == nil {
		g.embedded(resp)
		return g.uploadURL(resp)
	}
	resp.Header.Del(HeaderRoute) // the proxy's own, set by syncThrough
	sse := strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
	b := &geminiBody{rc: resp.Body, status: resp.StatusCode, served: geminiwire.TierOf(resp.Header.Get(geminiwire.TierHeader)),
		t: geminiTap{sse: sse, array: !sse && gs.c.stream && resp.StatusCode < 400}}
	gs.tap, resp.Body = b, b
	return nil
}

// answered reports a call once its answer has been passed on, or broke
// off; one that got no answer was reported by failed.
func (g geminiForwarder) answered(gs *faceSync) {
	b, _ := gs.tap.(*geminiBody)
	if gs.failed || b == nil {
		return
	}
	outcome := "ok"
	switch streamErr := b.t.streamError(); {
	case b.status >= 400:
		s, _ := geminiwire.ParseError(b.t.kept())
		outcome = s.Status
		if outcome == "" {
			outcome = geminiwire.StatusOf(b.status)
		}
		g.s.fwd.obs.failed(outcome)
	case streamErr != "": // the stream ended in an error event after its 200
		outcome = streamErr
		g.s.fwd.obs.failed(outcome)
	case !b.eof && gs.caller.Err() != nil:
		outcome = "caller_canceled"
	case !b.eof:
		outcome = "network"
		g.s.fwd.obs.failed(outcome)
	}
	g.observe(gs.c, gs.served, b.served, &b.t, outcome, outcome != "ok" && b.status < 400)
}

// failed answers and reports a sync or flex call that got no answer: cut
// by its hard deadline or the upstream timeout (504 DEADLINE_EXCEEDED),
// left by its caller, or failed to reach the upstream (502). A call cut
// while an attempt it sent may be billed (faceSync.sent) has its usage
// estimated.
func (g geminiForwarder) failed(w http.ResponseWriter, r *http.Request, gc *faceSync, state int32) {
	c, sent := gc.c, gc.sent.Load()
	switch {
	case state == callCutHard || state == callCutTimeout:
		g.observe(c, gc.served, "", nil, geminiwire.StatusDeadlineExceeded, sent)
		msg := g.s.cutMessage(state, c.budget, "upstream Gemini API")
		if state == callCutTimeout { // the call's own bound, its tier's
			msg = timeoutMessage("upstream Gemini API", tierTimeout(g.s, geminiProvider, llmfleet.TierOf(c.route)))
		}
		writeGeminiBody(w, http.StatusGatewayTimeout, geminiwire.Envelope(http.StatusGatewayTimeout, msg))
	case r.Context().Err() != nil:
		g.observe(c, gc.served, "", nil, "caller_canceled", sent)
	default:
		g.s.fwd.obs.failed("network")
		g.observe(c, gc.served, "", nil, "network", sent) // written: may have been carried out
		w.Header().Set("Connection", "close")
		writeGeminiBody(w, http.StatusBadGateway, geminiwire.Envelope(http.StatusBadGateway, "The upstream Gemini API could not be reached."))
	}
}

// observe hands the ledger the entry of a sync or flex call (Server.Observe):
// the usage its answer read, else, for a call cut after it was sent, an
// estimate; the tier served (the x-gemini-service-tier header's, else the
// usage's, else the one asked for).
func (g geminiForwarder) observe(c *call, asked, served llmfleet.Tier, t *geminiTap, outcome string, cut bool) {
	o := g.s.fwd.obs
	if o.observe == nil {
		return
	}
	e := o.callEntry(geminiProvider, c, outcome)
	e.Tier = served
	if t != nil && (outcome == "ok" || cut) {
		a := t.answer()
		e.Usage = a.Usage
		if e.Tier == "" {
			e.Tier = a.Tier
		}
		if a.Model != "" {
			e.Model = a.Model
		}
	}
	o.handCall(c, e, asked, cut)
}
