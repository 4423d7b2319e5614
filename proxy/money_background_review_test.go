package proxy_test

// Adversarial review of the background-response ledgering: each test
// failed on the code before its fix (the ledgering of a background
// response a call continues from runs once the call is admitted; it reads
// the response's members as they pass, however long; Gemini embeddings
// count their body's bytes as they are sent; the emulator cancels
// background responses and keeps streamed ones).

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet/openaiemu"
)

// readCounter counts (and delays) the upstream reads of responses by id,
// passing every request on to next.
type readCounter struct {
	next  http.Handler
	delay time.Duration
	mu    sync.Mutex
	reads int
}

func (c *readCounter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v1/responses/") {
		c.mu.Lock()
		c.reads++
		c.mu.Unlock()
		time.Sleep(c.delay)
	}
	c.next.ServeHTTP(w, r)
}

func (c *readCounter) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reads
}

// Held keys: settleChained runs in openAIFace.parse, before
// openAIHeldRefs checks that the previous_response_id is the caller's.
// Client b naming client a's background response has the proxy read a's
// response upstream under the shared key (and ledger it) before b is
// refused: b's refusal takes as long as that read (up to settleWait), so
// b learns whether an id is a background response made through the proxy
// whose end nobody has read yet; and each such call of b spends an
// upstream read of a's response on the shared key.
func TestBGReviewHeldChainedReadsOtherClientsResponseBeforeRefusal(t *testing.T) {
	var l moneyLedger
	up := &readCounter{next: &bgUpstream{}, delay: time.Second}
	ts := moneyServer(t, up, true, &l, nil)
	if code, body := heldCall(t, ts, http.MethodPost, "ka", "/openai/v1/responses", bgCreate); code != http.StatusOK {
		t.Fatalf("a's background create: %d %s", code, body)
	}
	start := time.Now()
	code, body := heldCall(t, ts, http.MethodPost, "kb", "/openai/v1/responses",
		`{"model":"o3","previous_response_id":"resp_bg1","input":"go on"}`)
	took := time.Since(start)
	if code != http.StatusNotFound {
		t.Fatalf("b continuing from a's response: %d %s, want 404", code, body)
	}
	if n := up.count(); n != 0 {
		t.Errorf("b's refused call read a's response upstream %d time(s) under the shared key", n)
	}
	if took > 500*time.Millisecond {
		t.Errorf("b's refusal took %v (an upstream read of a's response): a timing oracle on a's responses", took)
	}
	if got := byID(l.settle(), "resp_bg1"); len(got) != 0 {
		t.Errorf("b's refused call ledgered a's response: %+v", got)
	}
}

// bigUp is a fake OpenAI API with one background response, resp_big,
// whose end (a completed response whose output is 5 MiB of text, as an
// image_generation_call's base64 result can be) is read by GET, as JSON
// or, with ?stream=true, as the replayed stream of its events.
func bigUp(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	text := strings.Repeat("x", 5<<20)
	done := `{"id":"resp_big","object":"response","created_at":1,"status":"completed","background":true,"model":"o3-2025-04-16","service_tier":"default",` +
		`"output":[{"id":"msg_big","type":"message","role":"assistant","status":"completed","content":[{"type":"output_text","text":"` + text + `","annotations":[]}]}],` +
		`"usage":{"input_tokens":2000,"output_tokens":60000,"total_tokens":62000}}`
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/responses" && strings.Contains(string(b), `"background":true`):
		answerJSON(w, `{"id":"resp_big","object":"response","created_at":1,"status":"queued","background":true,"model":"o3-2025-04-16","service_tier":"auto","output":[],"usage":null}`)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/responses":
		answerJSON(w, `{"id":"resp_f1","object":"response","created_at":1,"status":"completed","background":false,"model":"o3-2025-04-16","service_tier":"default",`+
			`"output":[],"usage":{"input_tokens":20,"output_tokens":2,"total_tokens":22}}`)
	case r.Method == http.MethodGet && r.URL.Path == "/v1/responses/resp_big" && r.URL.Query().Get("stream") == "true":
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":9,\"response\":"+done+"}\n\n")
	case r.Method == http.MethodGet && r.URL.Path == "/v1/responses/resp_big":
		answerJSON(w, done)
	default:
		w.WriteHeader(http.StatusNotFound)
	}
}

// A background response whose end is over 4 MiB is never ledgered when
// the client only continues from it: readResponse cuts the read at
// maxStreamEvent and the cut JSON does not parse.
func TestBGReviewChainedBigResponseUnledgered(t *testing.T) {
	var l moneyLedger
	ts := moneyServer(t, http.HandlerFunc(bigUp), false, &l, nil)
	heldCall(t, ts, http.MethodPost, "sk-client", "/openai/v1/responses", bgCreate)
	if code, body := heldCall(t, ts, http.MethodPost, "sk-client", "/openai/v1/responses",
		`{"model":"o3","previous_response_id":"resp_big","input":"go on"}`); code != http.StatusOK {
		t.Fatalf("follow-up: %d %.200s", code, body)
	}
	if got := byID(l.settle(), "resp_big"); len(got) != 1 {
		t.Errorf("resp_big (2,000 in + 60,000 out, its end 5 MiB) continued from: %d entries, want 1", len(got))
	}
}

// Gemini embeddings are estimated from in.ContentLength: a body sent
// chunked (no Content-Length: -1) is estimated at 0 tokens, $0, though
// it is ~4,500 tokens billed. Without proxy-held keys nothing buffers
// the body first.
func TestBGReviewGeminiEmbedChunkedEstimatedZero(t *testing.T) {
	var l moneyLedger
	ts := moneyServer(t, http.HandlerFunc(passUp), false, &l, nil)
	body := `{"content":{"parts":[{"text":"` + strings.Repeat("embed me ", 2000) + `"}]}}`
	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/gemini/v1beta/models/gemini-embedding-001:embedContent",
		io.MultiReader(strings.NewReader(body))) // no length known: sent chunked
	req.Header.Set("x-goog-api-key", "gk-client")
	req.Header.Set("Content-Type", "application/json")
	res, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("embed: %d", res.StatusCode)
	}
	es := l.settle()
	if len(es) != 1 || es[0].Usage.InputTokens < 1000 {
		t.Errorf("a chunked embedContent of %d bytes: entries %+v, want one estimating ~%d input tokens", len(body), es, len(body)/4)
	}
}

// The emulator's background mode: the real API cancels a background
// response (POST /v1/responses/{id}/cancel answers its Response object,
// idempotently) and serves a background response created streamed by its
// id (GET, and ?stream=true to resume); the emulator answers both 404.
func TestBGReviewEmulatorBackgroundCancelAndStreamedGet(t *testing.T) {
	emu := httptest.NewServer(&openaiemu.Server{})
	t.Cleanup(emu.Close)
	call := func(method, path, body string) (int, string) {
		req, _ := http.NewRequest(method, emu.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer sk-x")
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	code, body := call(http.MethodPost, "/v1/responses", `{"model":"gpt-4.1","input":"hi","background":true}`)
	if code != http.StatusOK {
		t.Fatalf("create: %d %s", code, body)
	}
	id := idIn(body)
	if code, body := call(http.MethodPost, "/v1/responses/"+id+"/cancel", ""); code != http.StatusOK {
		t.Errorf("cancel of a background response: %d %.200s, want 200 and its Response object", code, body)
	}
	code, body = call(http.MethodPost, "/v1/responses", `{"model":"gpt-4.1","input":"another question","background":true,"stream":true}`)
	if code != http.StatusOK {
		t.Fatalf("streamed create: %d", code)
	}
	sid := idIn(body[strings.Index(body, "data: ")+6:])
	if code, body := call(http.MethodGet, "/v1/responses/"+sid, ""); code != http.StatusOK {
		t.Errorf("GET of a background response created streamed (%s): %d %.200s, want 200", sid, code, body)
	}
}

// idIn returns the first "id":"resp_..." in s.
func idIn(s string) string {
	i := strings.Index(s, `"resp_`)
	if i < 0 {
		return ""
	}
	s = s[i+1:]
	return s[:strings.IndexByte(s, '"')]
}
