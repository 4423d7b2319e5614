package proxy_test

import (
	"bufio"
	"encoding/json"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/emulator"
	"github.com/llmfleet/llmfleet/openaiemu"
	"github.com/llmfleet/llmfleet/proxy"
)

// counted counts the requests an upstream gets.
type counted struct {
	next http.Handler
	n    atomic.Int64
}

func (c *counted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.n.Add(1)
	c.next.ServeHTTP(w, r)
}

// rawGet sends GET target to addr as written, on a connection of its own,
// with the client key key, and returns the answer's status and body.
func rawGet(t *testing.T, addr, target, key string) (int, string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET "+target+" HTTP/1.1\r\nHost: "+addr+"\r\nAuthorization: Bearer "+key+"\r\nAnthropic-Version: 2023-06-01\r\nConnection: close\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("GET %s: %v", target, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestDotSegmentsRefusedWithHeldKeys reproduces the attack of issue 20:
// with proxy-held keys, alice makes a Message Batch and uploads an OpenAI
// file through the proxy; bob asks for them under /v1/models/, the path
// every client may read, with dot segments to climb out of it (encoded,
// double-encoded, next to encoded slashes and backslashes, under a budget
// prefix, on either face). Each is a 400 in its face's envelope and
// none reaches an upstream; alice's own reads and bob's real model reads
// still go through.
func TestDotSegmentsRefusedWithHeldKeys(t *testing.T) {
	anth := &counted{next: &emulator.Server{Turnaround: func(string, *rand.Rand) time.Duration { return 0 }, Logger: slog.New(slog.DiscardHandler)}}
	oemu := &counted{next: &openaiemu.Server{Keys: []string{"sk-proxy-openai"}}}
	anthTS, oaiTS := httptest.NewServer(anth), httptest.NewServer(oemu)
	defer anthTS.Close()
	defer oaiTS.Close()
	keys := &proxy.ClientKeys{Upstream: llmfleet.Credential{APIKey: "sk-ant-proxy"}, OpenAI: llmfleet.Credential{AuthToken: "sk-proxy-openai"},
		Hashes: map[string]string{proxy.HashKey("alice-key"): "alice", proxy.HashKey("bob-key"): "bob"}}
	au, _ := url.Parse(anthTS.URL)
	ou, _ := url.Parse(oaiTS.URL)
	ps := httptest.NewServer((&proxy.Server{Upstream: au, OpenAIUpstream: ou, Credentials: keys.Map,
		OpenAICredentials: keys.MapOpenAI, ClientName: keys.Name}).Handler())
	defer ps.Close()
	addr := ps.Listener.Addr().String()

	status, body := batchCall(t, ps.URL, "POST", "/v1/messages/batches",
		`{"requests":[{"custom_id":"a","params":{"model":"claude-test","max_tokens":10,"messages":[{"role":"user","content":"alice's secret"}]}}]}`, "alice-key")
	var batch struct{ ID string }
	if status != 200 || json.Unmarshal([]byte(body), &batch) != nil || batch.ID == "" {
		t.Fatalf("alice creates a batch: %d %s", status, body)
	}
	alice := sdk(ps.URL+"/openai/v1", "alice-key")
	f, err := alice.Files.New(t.Context(), openai.FileNewParams{Purpose: openai.FilePurposeBatch,
		File: openai.File(strings.NewReader(`{"custom_id":"a","method":"POST","url":"/v1/chat/completions","body":{"model":"gpt-4.1","messages":[{"role":"user","content":"alice's secret"}]}}`+"\n"), "a.jsonl", "application/jsonl")})
	if err != nil {
		t.Fatalf("alice uploads a file: %v", err)
	}

	before := anth.n.Load() + oemu.n.Load()
	for _, target := range []string{
		"/v1/models/%2e%2e/messages/batches/" + batch.ID,
		"/v1/models/%2E%2e/messages/batches/" + batch.ID + "/results",
		"/v1/models/%252e%252e/messages/batches",
		"/v1/models%2f..%2fmessages%2fbatches%2f" + batch.ID,
		"/v1/models/x%5c..%5c..%5cmessages/batches/" + batch.ID,
		`/v1/models/x\..\..\messages/batches/` + batch.ID,
		"/v1/models/..;/messages/batches",
		"/budget/60000/v1/models/%2e%2e/messages/batches/" + batch.ID,
		"/llmfleet/v1/requests/%2e%2e/%2e%2e/v1/messages/batches",
	} {
		status, body := rawGet(t, addr, target, "bob-key")
		var env struct {
			Type  string
			Error struct{ Type, Message string }
		}
		if status != 400 || json.Unmarshal([]byte(body), &env) != nil || env.Type != "error" || env.Error.Type != "invalid_request_error" ||
			!strings.Contains(env.Error.Message, "dot segments") {
			t.Errorf("bob GET %s: %d %s", target, status, body)
		}
	}
	for _, target := range []string{
		"/openai/v1/models/%2e%2e/files/" + f.ID + "/content",
		"/openai/v1/models/%2e%2E/files",
		"/openai/v1/models/%252E%252E/batches",
		"/openai/v1/models%2F%2e%2e%2Ffiles%2F" + f.ID,
		`/openai/v1/models/a\..\..\files/` + f.ID + "/content",
		"/budget/60000/openai/v1/models/./../files",
	} {
		status, body := rawGet(t, addr, target, "bob-key")
		var env struct {
			Error struct {
				Message, Type string
				Param, Code   *string
			}
		}
		if status != 400 || json.Unmarshal([]byte(body), &env) != nil || env.Error.Type != "invalid_request_error" ||
			env.Error.Param != nil || env.Error.Code == nil || !strings.Contains(env.Error.Message, "dot segments") {
			t.Errorf("bob GET %s: %d %s", target, status, body)
		}
	}
	if n := anth.n.Load() + oemu.n.Load() - before; n != 0 {
		t.Errorf("bob's dot segments reached the upstreams %d times", n)
	}

	// What is allowed still goes through.
	if status, body := rawGet(t, addr, "/v1/messages/batches/"+batch.ID, "alice-key"); status != 200 || !strings.Contains(body, batch.ID) {
		t.Errorf("alice reads her batch: %d %s", status, body)
	}
	if status, body := rawGet(t, addr, "/openai/v1/files/"+f.ID+"/content", "alice-key"); status != 200 || !strings.Contains(body, "alice's secret") {
		t.Errorf("alice reads her file: %d %s", status, body)
	}
	before = anth.n.Load() + oemu.n.Load()
	rawGet(t, addr, "/v1/models/claude-test", "bob-key")
	rawGet(t, addr, "/openai/v1/models/gpt-4.1", "bob-key")
	if n := anth.n.Load() + oemu.n.Load() - before; n != 2 {
		t.Errorf("bob's model reads reached the upstreams %d times, want 2", n)
	}
}

// TestRefusalsInTheFacesEnvelope: a path with a bad budget prefix or a
// dot segment is refused 400 in the envelope of the face the path is of.
func TestRefusalsInTheFacesEnvelope(t *testing.T) {
	ts := httptest.NewServer((&proxy.Server{}).Handler())
	defer ts.Close()
	for path, face := range map[string]string{
		"/budget/soon/v1/messages":                                           "anthropic",
		"/budget/soon/openai/v1/chat/completions":                            "openai",
		"/budget/soon/gemini/v1beta/models/gemini-2.5-flash:generateContent": "gemini",
		"/gemini/v1beta/models/%2e%2e/batches":                               "gemini",
		"/openai/v1/files/%2e%2e/batches":                                    "openai",
		"/v1/messages/batches/%2e%2e":                                        "anthropic",
	} {
		res, err := ts.Client().Post(ts.URL+path, "application/json", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		var env struct {
			Type  string
			Error struct{ Type, Status string }
		}
		json.Unmarshal(b, &env)
		var ok bool
		switch face {
		case "anthropic":
			ok = env.Type == "error" && env.Error.Type == "invalid_request_error"
		case "openai":
			ok = env.Type == "" && env.Error.Type == "invalid_request_error"
		case "gemini":
			ok = env.Type == "" && env.Error.Status == "INVALID_ARGUMENT"
		}
		if res.StatusCode != http.StatusBadRequest || !ok {
			t.Errorf("%s: %d %s, want a 400 in the %s envelope", path, res.StatusCode, b, face)
		}
	}
}
