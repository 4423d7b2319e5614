package proxy

import (
	"bytes"
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
	buf bytes.Buffer
	sse bool
	// over says the JSON answer outgrew maxGeminiTap.
	over bool
}

func (t *geminiTap) Write(p []byte) (int, error) {
	switch {
	case t.sse && t.buf.Len()+len(p) > maxGeminiTap:
		tail := append(t.buf.Bytes()[t.buf.Len()/2:], p...)
		t.buf.Reset()
		t.buf.Write(tail)
	case !t.sse && t.buf.Len()+len(p) > maxGeminiTap:
		t.over = true
	default:
		t.buf.Write(p)
	}
	return len(p), nil
}

// answer reads the model, usage and served tier of the answer kept.
func (t *geminiTap) answer() geminiwire.Answer {
	if !t.sse {
		if t.over {
			return geminiwire.Answer{}
		}
		a, _ := geminiwire.ReadAnswer(t.buf.Bytes())
		return a
	}
	var a geminiwire.Answer
	for ev := range strings.SplitSeq(t.buf.String(), "\n") {
		data, ok := strings.CutPrefix(strings.TrimSpace(ev), "data:")
		if !ok {
			continue
		}
		if got, err := geminiwire.ReadAnswer([]byte(strings.TrimSpace(data))); err == nil {
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

// hopHeaders are the headers not passed on from an upstream answer.
var hopHeaders = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// pass passes the upstream's answer on as it streams, then reports the
// call to the ledger.
func (g geminiForwarder) pass(w http.ResponseWriter, r *http.Request, gc *geminiCall, res *http.Response) {
	defer res.Body.Close()
	h := w.Header()
	for k, v := range res.Header {
		h[k] = v
	}
	for _, k := range hopHeaders {
		h.Del(k)
	}
	h.Set(HeaderRoute, string(gc.c.route))
	w.WriteHeader(res.StatusCode)
	t := &geminiTap{sse: strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream")}
	err := copyFlushing(io.MultiWriter(w, t), w, res.Body, t.sse)
	outcome := "ok"
	switch {
	case res.StatusCode >= 400:
		s, _ := geminiwire.ParseError(t.buf.Bytes())
		outcome = s.Status
		if outcome == "" {
			outcome = geminiwire.StatusOf(res.StatusCode)
		}
		g.s.fwd.obs.failed(outcome)
	case err != nil && r.Context().Err() != nil:
		outcome = "caller_canceled"
	case err != nil:
		outcome = "network"
	}
	served := geminiwire.TierOf(res.Header.Get(geminiwire.TierHeader))
	g.observe(gc.c, gc.served, served, t, outcome, outcome != "ok" && res.StatusCode < 400)
}

// copyFlushing copies src to dst, flushing w after each read of a stream.
func copyFlushing(dst io.Writer, w http.ResponseWriter, src io.Reader, stream bool) error {
	rc := http.NewResponseController(w)
	buf := make([]byte, copyBuffer)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return werr
			}
			if stream {
				rc.Flush()
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// failed answers and reports a sync or flex call that got no answer: cut
// by its hard deadline or the upstream timeout (504 DEADLINE_EXCEEDED),
// left by its caller, or failed to reach the upstream (502).
func (g geminiForwarder) failed(w http.ResponseWriter, r *http.Request, gc *geminiCall, state int32) {
	c := gc.c
	switch {
	case state == callCutHard || state == callCutTimeout:
		g.observe(c, gc.served, "", nil, geminiwire.StatusDeadlineExceeded, true)
		msg := g.s.cutMessage(state, c.budget, "upstream Gemini API")
		if state == callCutTimeout { // the call's own bound, its tier's
			msg = timeoutMessage("upstream Gemini API", tierTimeout(g.s, geminiProvider, llmfleet.TierOf(c.route)))
		}
		writeGeminiBody(w, http.StatusGatewayTimeout, geminiwire.Envelope(http.StatusGatewayTimeout, msg))
	case r.Context().Err() != nil:
		g.observe(c, gc.served, "", nil, "caller_canceled", true)
	default:
		g.s.fwd.obs.failed("network")
		g.observe(c, gc.served, "", nil, "network", false)
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
