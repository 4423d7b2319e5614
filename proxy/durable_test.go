package proxy_test

import (
	"bufio"
	"encoding/json"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/dispatch"
	"github.com/llmfleet/llmfleet/proxy"
	"github.com/llmfleet/llmfleet/sqlite"
	"github.com/llmfleet/llmfleet/vault"
)

// newDurableStack is newStack with durable state: the dispatcher keeps its
// requests in a SQLite store and seals credentials with a vault, both in a
// temporary directory. srv, if not nil, is the proxy to put in front.
func newDurableStack(t *testing.T, pol dispatch.Policy, srv *proxy.Server) *stack {
	t.Helper()
	dir := t.TempDir()
	db := &sqlite.DB{Path: filepath.Join(dir, "llmfleet.db"), Logger: slog.New(slog.DiscardHandler)}
	if err := db.Open(t.Context()); err != nil {
		t.Fatal(err)
	}
	v, err := vault.Open(filepath.Join(dir, "secret"))
	if err != nil {
		t.Fatal(err)
	}
	return startStack(t, pol, srv, db, v)
}

// get sends GET path to the proxy with the API key key ("" for none), as
// x-api-key, or as an Authorization header if key begins with "Bearer ".
func get(t *testing.T, base, path, key string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("GET", base+path, nil)
	if strings.HasPrefix(key, "Bearer ") {
		req.Header.Set("Authorization", key)
	} else if key != "" {
		req.Header.Set("X-Api-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// answer is a status and body as a client got it.
type answer struct {
	status int
	body   string
}

// fetch polls GET /llmfleet/v1/requests/{id} until it answers something
// other than 202, and returns the answer and the statuses seen on the way.
func fetch(t *testing.T, base, id, key string) (answer, []string) {
	t.Helper()
	var seen []string
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		resp := get(t, base, proxy.RequestsPath+id, key)
		body := readAll(t, resp.Body)
		if resp.StatusCode != http.StatusAccepted {
			if resp.Header.Get("llmfleet-request-id") != id || resp.Header.Get("llmfleet-route") != "batch" {
				t.Errorf("done: headers %v", resp.Header)
			}
			return answer{resp.StatusCode, body}, seen
		}
		var tk struct{ ID, Type, Status string }
		if err := json.Unmarshal([]byte(body), &tk); err != nil || tk.ID != id || tk.Type != "llmfleet_request" {
			t.Fatalf("pending ticket %s", body)
		}
		if len(seen) == 0 || seen[len(seen)-1] != tk.Status {
			seen = append(seen, tk.Status)
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("request %s still pending after 10s (%v)", id, seen)
	return answer{}, nil
}

func userBody(text string) string {
	b, _ := json.Marshal(map[string]any{
		"model": "claude-test", "max_tokens": 100,
		"messages": []any{map[string]any{"role": "user", "content": text}},
	})
	return string(b)
}

func TestDurableAsyncTicket(t *testing.T) {
	// Two requests fill a pool: the first stays queued until the second
	// arrives.
	st := newDurableStack(t, dispatch.Policy{BatchMinSize: 2, BatchWindow: time.Hour}, nil)
	const key = "sk-test-a"

	first := userBody("alpha [turnaround:1s]")
	resp := post(t, st.ts.URL+"/v1/messages", first, "Prefer", "respond-async")
	body := readAll(t, resp.Body)
	var tk struct {
		ID     string `json:"id"`
		Type   string `json:"type"`
		Status string `json:"status"`
	}
	if err := json.Unmarshal([]byte(body), &tk); err != nil {
		t.Fatal(err)
	}
	id := tk.ID
	if resp.StatusCode != http.StatusAccepted || !strings.HasPrefix(id, "lfr_") || tk.Type != "llmfleet_request" || tk.Status != "queued" {
		t.Fatalf("async: %d %s", resp.StatusCode, body)
	}
	if !sameJSON(t, body, `{"id":"`+id+`","type":"llmfleet_request","status":"queued"}`) {
		t.Fatalf("async body %s has other members", body)
	}
	h := resp.Header
	if h.Get("Location") != "/llmfleet/v1/requests/"+id || h.Get("llmfleet-request-id") != id ||
		h.Get("llmfleet-route") != "batch" || h.Get("Preference-Applied") != "respond-async" {
		t.Fatalf("async headers %v", h)
	}

	// Pending: 202 with the status, for its own key; 404 for another; 401
	// without one. The budget prefix applies to this path too.
	resp = get(t, st.ts.URL, "/llmfleet/v1/requests/"+id, key)
	if b := readAll(t, resp.Body); resp.StatusCode != http.StatusAccepted || !sameJSON(t, b, body) {
		t.Fatalf("pending: %d %s", resp.StatusCode, b)
	}
	resp = get(t, st.ts.URL, "/budget/1000/llmfleet/v1/requests/"+id, key)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("pending under the budget prefix: %d", resp.StatusCode)
	}
	assertNotFound(t, get(t, st.ts.URL, "/llmfleet/v1/requests/"+id, "sk-test-other"))
	assertNotFound(t, get(t, st.ts.URL, "/llmfleet/v1/requests/lfr_doesnotexist", key))
	if resp := get(t, st.ts.URL, "/llmfleet/v1/requests/"+id, ""); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no key: %d", resp.StatusCode)
	}

	// A streaming request asked async is kept as its Message.
	resp = post(t, st.ts.URL+"/v1/messages", strings.Replace(userBody("beta"), "{", `{"stream":true,`, 1), "Prefer", "wait=5, respond-async")
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("second async: %d %s", resp.StatusCode, readAll(t, resp.Body))
	}
	second := resp.Header.Get("llmfleet-request-id")

	got, seen := fetch(t, st.ts.URL, id, key)
	if len(seen) == 0 || seen[len(seen)-1] != "submitted" {
		t.Errorf("statuses seen while pending %v, want submitted last", seen)
	}
	// The answer is what the synchronous call would have got: the same
	// body sent sync-batched (the emulator's replies are a function of
	// the body) answers the very same bytes.
	ch := make(chan answer, 2)
	for _, b := range []string{first, userBody("filler")} {
		go func() {
			resp := post(t, st.ts.URL+"/v1/messages", b, "llmfleet-route", "batch")
			ch <- answer{resp.StatusCode, readAll(t, resp.Body)}
		}()
	}
	var want answer
	for range 2 {
		if a := <-ch; strings.Contains(a.body, "alpha") {
			want = a
		}
	}
	if got != want || got.status != 200 || !strings.Contains(got.body, `"Answer to: alpha [turnaround:1s]"`) {
		t.Fatalf("ticket answered\n %+v\nsync answered\n %+v", got, want)
	}
	if got, _ := fetch(t, st.ts.URL, second, key); got.status != 200 || !strings.Contains(got.body, `"Answer to: beta"`) ||
		strings.Contains(got.body, "event:") {
		t.Fatalf("streaming request asked async: %+v", got)
	}
	if dup := st.emu.Stats().DuplicateParams(); len(dup) != 1 {
		// alpha was sent twice on purpose, nothing else.
		t.Fatalf("duplicate submissions %v", dup)
	}
}

// assertNotFound checks a 404 not_found_error envelope.
func assertNotFound(t *testing.T, resp *http.Response) {
	t.Helper()
	var env struct {
		Type  string `json:"type"`
		Error struct{ Type string }
	}
	b := readAll(t, resp.Body)
	if resp.StatusCode != http.StatusNotFound || json.Unmarshal([]byte(b), &env) != nil || env.Type != "error" || env.Error.Type != "not_found_error" {
		t.Fatalf("want 404 not_found_error, got %d %s", resp.StatusCode, b)
	}
}

func TestDurableSyncAnswersCanBeFetchedAgain(t *testing.T) {
	st := newDurableStack(t, dispatch.Policy{}, nil)
	const key = "sk-test-a"
	for _, prompt := range []string{"gamma", "[error:invalid_request_error] delta", "[error:overloaded_error] epsilon", "[expire] theta"} {
		resp := post(t, st.ts.URL+"/v1/messages", userBody(prompt), "llmfleet-route", "batch")
		sync := answer{resp.StatusCode, readAll(t, resp.Body)}
		id := resp.Header.Get("llmfleet-request-id")
		if !strings.HasPrefix(id, "lfr_") || resp.Header.Get("llmfleet-route") != "batch" {
			t.Fatalf("%s: headers %v", prompt, resp.Header)
		}
		if strings.HasPrefix(prompt, "[") == (sync.status == 200) {
			t.Fatalf("%s: sync answered %+v", prompt, sync)
		}
		got, _ := fetch(t, st.ts.URL, id, key)
		if got != sync {
			t.Fatalf("%s: fetched\n %+v\nsync answered\n %+v", prompt, got, sync)
		}
		assertNotFound(t, get(t, st.ts.URL, proxy.RequestsPath+id, "sk-test-other"))
	}
}

func TestDurableStreamCarriesRequestID(t *testing.T) {
	// The batch goes out half a second after the call: a ping comes first
	// however loaded the machine.
	st := newDurableStack(t, dispatch.Policy{BatchWindow: 500 * time.Millisecond}, nil)
	resp := post(t, st.ts.URL+"/v1/messages", strings.Replace(userBody("zeta"), "{", `{"stream":true,`, 1),
		"llmfleet-route", "batch")
	id := resp.Header.Get("llmfleet-request-id")
	if resp.StatusCode != 200 || !strings.HasPrefix(id, "lfr_") || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("stream: %d %v", resp.StatusCode, resp.Header)
	}
	// The headers came with the first ping, before the batch ended.
	br := bufio.NewReader(resp.Body)
	first, err := br.ReadString('\n')
	if err != nil || first != "event: ping\n" {
		t.Fatalf("first line %q %v", first, err)
	}
	if rest := readAll(t, br); !strings.Contains(rest, "Answer to: zeta") {
		t.Fatalf("stream %s", rest)
	}
	got, _ := fetch(t, st.ts.URL, id, "sk-test-a")
	if got.status != 200 || !strings.Contains(got.body, `"Answer to: zeta"`) {
		t.Fatalf("fetched %+v", got)
	}
}

func TestDurableProxyHeldKeysSeparateClients(t *testing.T) {
	keys := &proxy.ClientKeys{
		Upstream: llmfleet.Credential{APIKey: "sk-upstream"},
		Hashes:   map[string]string{proxy.HashKey("alice-key"): "alice", proxy.HashKey("bob-key"): "bob"},
	}
	st := newDurableStack(t, dispatch.Policy{}, &proxy.Server{Credentials: keys.Map})
	req, _ := http.NewRequest("POST", st.ts.URL+"/v1/messages", strings.NewReader(userBody("eta")))
	req.Header.Set("X-Api-Key", "alice-key")
	req.Header.Set("Prefer", "respond-async")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	id := resp.Header.Get("llmfleet-request-id")
	if resp.StatusCode != http.StatusAccepted || id == "" {
		t.Fatalf("alice's async request: %d", resp.StatusCode)
	}
	got, _ := fetch(t, st.ts.URL, id, "alice-key")
	if got.status != 200 || !strings.Contains(got.body, "Answer to: eta") {
		t.Fatalf("alice fetched %+v", got)
	}
	// Bob shares the upstream credential, not alice's requests.
	assertNotFound(t, get(t, st.ts.URL, proxy.RequestsPath+id, "bob-key"))
	if resp := get(t, st.ts.URL, proxy.RequestsPath+id, "sk-upstream"); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("upstream key presented by a client: %d", resp.StatusCode)
	}
}

func TestAsyncRefused(t *testing.T) {
	// Without durable state, or with the sync route forced, respond-async
	// is refused at once with a 400.
	st := newStack(t, dispatch.Policy{})
	for _, hdr := range [][]string{
		{"Prefer", "respond-async"},
		{"Prefer", "respond-async", "llmfleet-route", "sync"},
	} {
		resp := post(t, st.ts.URL+"/v1/messages", simpleBody, hdr...)
		if b := readAll(t, resp.Body); resp.StatusCode != 400 || !strings.Contains(b, "invalid_request_error") || !strings.Contains(b, "respond-async") {
			t.Fatalf("%v: %d %s", hdr, resp.StatusCode, b)
		}
	}
	// The batch route's validation applies to async requests.
	st = newDurableStack(t, dispatch.Policy{}, nil)
	resp := post(t, st.ts.URL+"/v1/messages", `{"model":"claude-test","messages":[]}`, "Prefer", "respond-async")
	if b := readAll(t, resp.Body); resp.StatusCode != 400 || !strings.Contains(b, "max_tokens") || resp.Header.Get("llmfleet-route") != "batch" {
		t.Fatalf("invalid async: %d %s", resp.StatusCode, b)
	}
}
