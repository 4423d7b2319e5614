package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet/geminiemu"
	"github.com/llmfleet/llmfleet/geminiwire"
	"github.com/llmfleet/llmfleet/proxy"
)

// geminiAPI is the Gemini emulator in TestCrashMatrix: Batch Mode's
// creates (POST models/{model}:batchGenerateContent, the batch's
// displayName our tag) held, made with their answers dropped
// (geminiemu.DropAnswer) or landing late (geminiemu.Server.LandAfter); a
// batch's results are the read of the ended batch (GET batches/{id}),
// which may be held too.
type geminiAPI struct {
	emu *geminiemu.Server
	u   *matrixUpstream

	mu                  sync.Mutex
	holdC, holdR        bool
	drop, land          int // creates left to drop the answers of, to land late
	landBy              time.Duration
	createsSeen, served int
}

func newGeminiAPI(u *matrixUpstream) matrixAPI {
	g := &geminiAPI{u: u}
	g.emu = &geminiemu.Server{Clock: matrixClock{u}, BatchTurnaround: matrixTurnaround,
		Fault: func(path string) int {
			g.mu.Lock()
			defer g.mu.Unlock()
			if isGeminiCreate(path) && g.drop > 0 {
				g.drop--
				return geminiemu.DropAnswer
			}
			return 0
		},
		LandAfter: func(string) time.Duration {
			g.mu.Lock()
			defer g.mu.Unlock()
			if g.land > 0 {
				g.land--
				return g.landBy
			}
			return 0
		}}
	return g
}

func isGeminiCreate(path string) bool { return strings.HasSuffix(path, ":"+geminiwire.MethodBatch) }

// ServeHTTP holds a create before the emulator reads it, and the read of
// an ended batch (its results) once the emulator answered it, as armed.
func (g *geminiAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	create := r.Method == http.MethodPost && isGeminiCreate(r.URL.Path)
	g.mu.Lock()
	if create {
		g.createsSeen++
	}
	holdC, holdR := g.holdC, g.holdR
	g.mu.Unlock()
	if create && holdC {
		io.Copy(io.Discard, r.Body)
		g.u.hold(r.Context(), 0)
		return
	}
	if r.Method != http.MethodGet || !strings.HasPrefix(r.URL.Path, "/"+geminiwire.Version+"/batches/") {
		g.emu.ServeHTTP(w, r)
		return
	}
	rec := httptest.NewRecorder()
	g.emu.ServeHTTP(rec, r)
	var op struct {
		Done bool `json:"done"`
	}
	ended := rec.Code == http.StatusOK && json.Unmarshal(rec.Body.Bytes(), &op) == nil && op.Done
	if ended && holdR {
		g.u.hold(r.Context(), 0)
		return
	}
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	w.Write(rec.Body.Bytes())
	if ended {
		g.mu.Lock()
		g.served++
		g.mu.Unlock()
	}
}

func (g *geminiAPI) set(f func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	f()
}

func (g *geminiAPI) creates() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.createsSeen
}

func (g *geminiAPI) holdCreates()            { g.set(func() { g.holdC = true }) }
func (g *geminiAPI) dropCreateAnswers(n int) { g.set(func() { g.drop = n }) }
func (g *geminiAPI) holdResults()            { g.set(func() { g.holdR = true }) }

func (g *geminiAPI) landCreatesLate(d time.Duration, n int) {
	g.set(func() { g.land, g.landBy = n, d })
}

func (g *geminiAPI) clearFaults() {
	g.set(func() { g.holdC, g.holdR, g.drop, g.land = false, false, 0, 0 })
}

func (g *geminiAPI) batchesCreated(key string) int { return g.emu.BatchesCreated(key) }

func (g *geminiAPI) batchCount() int {
	n := 0
	for _, c := range g.emu.Stats().Created {
		n += c
	}
	return n
}

func (g *geminiAPI) resultsServed() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.served
}

// resultsReadAgain counts the batches read ended more than twice: serve
// reads an ended batch once as it polls, once for its results.
func (g *geminiAPI) resultsReadAgain() int {
	again := 0
	for _, n := range g.emu.Stats().ResultsRead {
		if n > 2 {
			again++
		}
	}
	return again
}

func (g *geminiAPI) submissions() []matrixSub {
	var out []matrixSub
	for _, s := range g.emu.Stats().Submissions {
		out = append(out, matrixSub{s.BatchID, s.Prompt})
	}
	return out
}

func (g *geminiAPI) classify(r *http.Request) (string, string) {
	batches := "/" + geminiwire.Version + "/batches"
	switch {
	case r.Method == http.MethodGet && (r.URL.Path == batches || strings.HasPrefix(r.URL.Path, batches+"/")):
		return "", geminiwire.RequestKey(r.Header, r.URL.Query())
	case r.Method == http.MethodPost && isGeminiCreate(r.URL.Path):
		return endpointCreate, ""
	}
	return "", ""
}

func (g *geminiAPI) describe() string {
	st := g.emu.Stats()
	return fmt.Sprintf("requests %v, created %v", st.Requests, st.Created)
}

// geminiCrashClient talks to the Gemini face.
type geminiCrashClient struct {
	t   *testing.T
	key string
}

func (c *geminiCrashClient) do(method, url, body string, hdr ...string) (int, http.Header, []byte) {
	c.t.Helper()
	return sendJSON(c.t, method, url, body, append([]string{geminiwire.APIKeyHeader, c.key}, hdr...)...)
}

func (c *geminiCrashClient) submit(base string, prompts []string) []string {
	c.t.Helper()
	var ids []string
	for _, p := range prompts {
		body := fmt.Sprintf(`{"contents":[{"role":"user","parts":[{"text":%q}]}]}`, p)
		status, h, b := c.do("POST", base+proxy.GeminiPrefix+"/v1beta/models/gemini-2.5-flash:generateContent", body, "Prefer", "respond-async")
		if status != http.StatusAccepted || h.Get(proxy.HeaderRequestID) == "" {
			c.t.Fatalf("async %s: %d %s", p, status, b)
		}
		ids = append(ids, h.Get(proxy.HeaderRequestID))
	}
	return ids
}

func (c *geminiCrashClient) status(base, id string) string {
	c.t.Helper()
	code, b := c.ticket(base, id)
	if code != http.StatusAccepted {
		return ""
	}
	var tk struct{ Status string }
	json.Unmarshal(b, &tk)
	return tk.Status
}

func (c *geminiCrashClient) ticket(base, id string) (int, []byte) {
	code, _, b := c.do("GET", base+proxy.GeminiRequestsPath+id, "")
	return code, b
}

// geminiText returns the answer text of a GenerateContentResponse body,
// or "".
func geminiText(body string) string {
	var r geminiwire.GenerateContentResponse
	if json.Unmarshal([]byte(body), &r) != nil || len(r.Candidates) != 1 || r.Candidates[0].Content == nil {
		return ""
	}
	var text strings.Builder
	for _, p := range r.Candidates[0].Content.Parts {
		if !p.Thought {
			text.WriteString(p.Text)
		}
	}
	return text.String()
}
