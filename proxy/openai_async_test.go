package proxy_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/dispatch"
	oai "github.com/llmfleet/llmfleet/openai"
	"github.com/llmfleet/llmfleet/openaiemu"
	"github.com/llmfleet/llmfleet/proxy"
	"github.com/llmfleet/llmfleet/sqlite"
	"github.com/llmfleet/llmfleet/vault"
)

// durableOpenAIFace is openAIFace with durable state (a SQLite store and
// a vault), so that requests have tickets and ids outlive their calls;
// held puts the proxy in proxy-held-key mode (clients alice-key and
// bob-key, the emulator taking only the proxy's key). It returns the
// proxy's base URL.
func durableOpenAIFace(t *testing.T, emu *openaiemu.Server, held bool) string {
	t.Helper()
	dir := t.TempDir()
	quiet := slog.New(slog.DiscardHandler)
	db := &sqlite.DB{Path: filepath.Join(dir, "llmfleet.db"), Logger: quiet}
	if err := db.Open(t.Context()); err != nil {
		t.Fatal(err)
	}
	v, err := vault.Open(filepath.Join(dir, "secret"))
	if err != nil {
		t.Fatal(err)
	}
	if held {
		emu.Keys = []string{"sk-proxy-openai"}
	}
	up := httptest.NewServer(emu)
	t.Cleanup(up.Close)
	d := &dispatch.Dispatcher{Providers: []llmfleet.Provider{&oai.Provider{BaseURL: up.URL}}, Store: db, Sealer: v, Logger: quiet,
		Policy: dispatch.Policy{BatchWindow: 20 * time.Millisecond, BatchMinSize: 100, PollInterval: 10 * time.Millisecond,
			MaxPollInterval: 20 * time.Millisecond, SyncLatencyPrior: time.Second, NoRescue: true}}
	if err := d.Open(); err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(up.URL)
	srv := &proxy.Server{Submitter: d, OpenAIUpstream: u, PingInterval: 10 * time.Millisecond, Logger: quiet}
	if held {
		keys := &proxy.ClientKeys{Upstream: llmfleet.Credential{APIKey: "sk-ant-proxy"}, OpenAI: llmfleet.Credential{AuthToken: "sk-proxy-openai"},
			Hashes: map[string]string{proxy.HashKey("alice-key"): "alice", proxy.HashKey("bob-key"): "bob"}}
		srv.Credentials, srv.OpenAICredentials, srv.ClientName, srv.BatchOwners = keys.Map, keys.MapOpenAI, keys.Name, db
	}
	ps := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		ps.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		d.Close(ctx)
		db.Close()
	})
	return ps.URL
}

// oaiCall posts body to the OpenAI face's endpoint with the bearer key
// and headers hdr (name, value, ...), and returns the answer.
func oaiCall(t *testing.T, base, endpoint, key, body string, hdr ...string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/openai/v1"+endpoint, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func chatBody(prompt string) string {
	b, _ := json.Marshal(map[string]any{"model": "gpt-4.1", "messages": []any{map[string]string{"role": "user", "content": prompt}}})
	return string(b)
}

// wantOpenAIError checks an answer in OpenAI's envelope.
func wantOpenAIError(t *testing.T, what string, resp *http.Response, body string, status int, typ, code string) {
	t.Helper()
	var env struct {
		Error *struct {
			Message, Type string
			Code          *string
		}
	}
	if resp.StatusCode != status || json.Unmarshal([]byte(body), &env) != nil || env.Error == nil || env.Error.Type != typ ||
		env.Error.Message == "" || code != "" && (env.Error.Code == nil || *env.Error.Code != code) {
		t.Errorf("%s: %d %s, want %d %s %s", what, resp.StatusCode, body, status, typ, code)
	}
}

// TestOpenAIFaceIdempotencyKey: a batched call of the OpenAI face
// retried with its Idempotency-Key (after the answer, or three at once)
// gets the answer of the first, under the same request id, on each
// routed endpoint, sent upstream once; another key's call is its own; the
// same Idempotency-Key with another body, or a malformed one, is a 400 in
// OpenAI's envelope.
func TestOpenAIFaceIdempotencyKey(t *testing.T) {
	emu := &openaiemu.Server{BatchTurnaround: 20 * time.Millisecond}
	base := durableOpenAIFace(t, emu, false)
	send := func(endpoint, key, body, idem string) answer {
		resp, b := oaiCall(t, base, endpoint, key, body, "llmfleet-route", "batch", "Idempotency-Key", idem)
		return answer{resp.StatusCode, b + "|" + resp.Header.Get("llmfleet-request-id")}
	}
	calls := []struct{ endpoint, body, prompt string }{
		{"/chat/completions", chatBody("idem chat"), "idem chat"},
		{"/responses", `{"model":"gpt-4.1","input":"idem responses"}`, "idem responses"},
		{"/embeddings", `{"model":"text-embedding-3-small","input":"idem embeddings"}`, "idem embeddings"},
	}
	firstChat := ""
	for _, c := range calls {
		first := send(c.endpoint, "sk-a", c.body, "key-"+c.endpoint)
		if c.endpoint == "/chat/completions" {
			_, firstChat, _ = strings.Cut(first.body, "|")
		}
		if first.status != 200 || strings.HasSuffix(first.body, "|") {
			t.Fatalf("%s: %+v", c.endpoint, first)
		}
		if again := send(c.endpoint, "sk-a", c.body, "key-"+c.endpoint); again != first {
			t.Errorf("%s retried:\n %+v\nfirst:\n %+v", c.endpoint, again, first)
		}
	}
	got := make([]answer, 3)
	var wg sync.WaitGroup
	for i := range got {
		wg.Go(func() { got[i] = send("/chat/completions", "sk-a", chatBody("idem together"), "key-together") })
	}
	wg.Wait()
	for _, a := range got {
		if a.status != 200 || a != got[0] || !strings.Contains(a.body, "Answer to: idem together") {
			t.Fatalf("concurrent retries: %+v", got)
		}
	}
	other := send("/chat/completions", "sk-b", chatBody("idem chat"), "key-/chat/completions")
	if _, id, _ := strings.Cut(other.body, "|"); other.status != 200 || id == firstChat {
		t.Errorf("another key: %+v", other)
	}
	resp, b := oaiCall(t, base, "/chat/completions", "sk-a", chatBody("idem changed"), "llmfleet-route", "batch", "Idempotency-Key", "key-/chat/completions")
	wantOpenAIError(t, "the same key with another body", resp, b, 400, "invalid_request_error", "idempotency_key_reused")
	resp, b = oaiCall(t, base, "/chat/completions", "sk-a", chatBody("idem bad key"), "llmfleet-route", "batch", "Idempotency-Key", "bad key")
	wantOpenAIError(t, "a malformed key", resp, b, 400, "invalid_request_error", "invalid_idempotency_key")
	billed := emu.Stats().Billed
	for prompt, want := range map[string]int{"idem chat": 2, "idem responses": 1, "idem embeddings": 1, "idem together": 1, "idem changed": 0, "idem bad key": 0} {
		if billed[prompt] != want {
			t.Errorf("%q billed %d times, want %d", prompt, billed[prompt], want)
		}
	}
}

// ticketOf fetches a ticket at path (RequestsPath or OpenAIRequestsPath)
// with the bearer key until it is answered.
func ticketOf(t *testing.T, base, path, id, key string) (*http.Response, string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		req, _ := http.NewRequest("GET", base+path+id, nil)
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted || time.Now().After(deadline) {
			return resp, string(b)
		}
	}
}

// TestOpenAIFaceAsyncTickets: Prefer: respond-async on the OpenAI face
// answers 202 with a ticket; the ticket answers, at /llmfleet/v1/requests
// and under the face's base URL (read with openai-go), the endpoint's
// body, or an error in OpenAI's envelope with the sync API's status. Only
// the key that sent it reads it; an Idempotency-Key gives the same ticket
// again; a forced sync route is refused.
func TestOpenAIFaceAsyncTickets(t *testing.T) {
	emu := &openaiemu.Server{BatchTurnaround: 20 * time.Millisecond}
	base := durableOpenAIFace(t, emu, false)
	async := []string{"Prefer", "respond-async", "Idempotency-Key", "async-1"}
	resp, b := oaiCall(t, base, "/chat/completions", "sk-a", chatBody("async chat"), async...)
	var tk struct{ ID, Type, Status string }
	if resp.StatusCode != 202 || json.Unmarshal([]byte(b), &tk) != nil || tk.Type != "llmfleet_request" || tk.Status != "queued" ||
		resp.Header.Get("Location") != proxy.RequestsPath+tk.ID || resp.Header.Get("llmfleet-request-id") != tk.ID ||
		resp.Header.Get("Preference-Applied") != "respond-async" {
		t.Fatalf("async: %d %v %s", resp.StatusCode, resp.Header, b)
	}
	if again, b := oaiCall(t, base, "/chat/completions", "sk-a", chatBody("async chat"), async...); again.Header.Get("llmfleet-request-id") != tk.ID {
		t.Errorf("async retried with its Idempotency-Key: %d %v %s", again.StatusCode, again.Header, b)
	}
	resp, b = ticketOf(t, base, proxy.RequestsPath, tk.ID, "sk-a")
	var cc openai.ChatCompletion
	if resp.StatusCode != 200 || json.Unmarshal([]byte(b), &cc) != nil || cc.Choices[0].Message.Content != "Answer to: async chat" ||
		resp.Header.Get("llmfleet-request-id") != tk.ID {
		t.Fatalf("the ticket: %d %s", resp.StatusCode, b)
	}
	client := sdk(base+"/openai/v1", "sk-a")
	var viaSDK openai.ChatCompletion
	if err := client.Get(t.Context(), "llmfleet/requests/"+tk.ID, nil, &viaSDK); err != nil || viaSDK.ID != cc.ID {
		t.Errorf("the ticket under the face's base URL: %v %+v", err, viaSDK)
	}
	resp, b = ticketOf(t, base, proxy.RequestsPath, tk.ID, "sk-b")
	if resp.StatusCode != 404 || !strings.Contains(b, "not_found_error") {
		t.Errorf("another key reads the ticket: %d %s", resp.StatusCode, b)
	}
	resp, b = ticketOf(t, base, proxy.OpenAIRequestsPath, tk.ID, "sk-b")
	wantOpenAIError(t, "another key under the face", resp, b, 404, "invalid_request_error", "")
	resp, b = ticketOf(t, base, proxy.OpenAIRequestsPath, tk.ID, "")
	wantOpenAIError(t, "no key under the face", resp, b, 401, "invalid_request_error", "invalid_api_key")

	// An error result: the API's status and envelope.
	resp, b = oaiCall(t, base, "/chat/completions", "sk-a", chatBody("fail [error:invalid_request_error]"), "Prefer", "respond-async")
	var failed struct{ ID string }
	json.Unmarshal([]byte(b), &failed)
	resp, b = ticketOf(t, base, proxy.OpenAIRequestsPath, failed.ID, "sk-a")
	wantOpenAIError(t, "a failed request's ticket", resp, b, 400, "invalid_request_error", "")
	err := client.Get(t.Context(), "llmfleet/requests/"+failed.ID, nil, &viaSDK)
	var ae *openai.Error
	if !errors.As(err, &ae) || ae.StatusCode != 400 || !strings.Contains(ae.Message, "[error:invalid_request_error]") {
		t.Errorf("a failed request's ticket through openai-go: %v", err)
	}

	// A stream asked async is stored as the endpoint's JSON.
	resp, b = oaiCall(t, base, "/responses", "sk-a", `{"model":"gpt-4.1","input":"async stream","stream":true}`, "Prefer", "respond-async")
	json.Unmarshal([]byte(b), &failed)
	resp, b = ticketOf(t, base, proxy.RequestsPath, failed.ID, "sk-a")
	var r responses.Response
	if resp.StatusCode != 200 || json.Unmarshal([]byte(b), &r) != nil || r.OutputText() != "Answer to: async stream" {
		t.Errorf("a stream asked async: %d %s", resp.StatusCode, b)
	}
	resp, b = oaiCall(t, base, "/chat/completions", "sk-a", chatBody("async sync"), "Prefer", "respond-async", "llmfleet-route", "sync")
	wantOpenAIError(t, "async on the sync route", resp, b, 400, "invalid_request_error", "")
	for prompt, n := range emu.Stats().Billed {
		if prompt == "async sync" || n != 1 {
			t.Errorf("%q billed %d times", prompt, n)
		}
	}
}

// TestOpenAIFaceAsyncNoStore: without durable state Prefer: respond-async
// is a 400 in OpenAI's envelope.
func TestOpenAIFaceAsyncNoStore(t *testing.T) {
	base := openAIFace(t, &openaiemu.Server{}, nil)
	resp, b := oaiCall(t, base, "/chat/completions", "sk-a", chatBody("no store"), "Prefer", "respond-async")
	wantOpenAIError(t, "async without a store", resp, b, 400, "invalid_request_error", "")
}

// TestOpenAIFaceHeldKeysTickets: with proxy-held keys, an OpenAI-face
// ticket is its client key's only (bob gets 404 on either path), and a
// response answered through a ticket is its client's: alice continues
// from it, bob cannot.
func TestOpenAIFaceHeldKeysTickets(t *testing.T) {
	emu := &openaiemu.Server{BatchTurnaround: 20 * time.Millisecond}
	base := durableOpenAIFace(t, emu, true)
	resp, b := oaiCall(t, base, "/responses", "alice-key", `{"model":"gpt-4.1","input":"alice async"}`, "Prefer", "respond-async")
	var tk struct{ ID string }
	if resp.StatusCode != 202 || json.Unmarshal([]byte(b), &tk) != nil {
		t.Fatalf("alice async: %d %s", resp.StatusCode, b)
	}
	for _, path := range []string{proxy.RequestsPath, proxy.OpenAIRequestsPath} {
		if resp, b := ticketOf(t, base, path, tk.ID, "bob-key"); resp.StatusCode != 404 {
			t.Errorf("bob reads alice's ticket at %s: %d %s", path, resp.StatusCode, b)
		}
	}
	resp, b = ticketOf(t, base, proxy.RequestsPath, tk.ID, "alice-key")
	var r responses.Response
	if resp.StatusCode != 200 || json.Unmarshal([]byte(b), &r) != nil || r.ID == "" {
		t.Fatalf("alice reads her ticket: %d %s", resp.StatusCode, b)
	}
	alice, bob := sdk(base+"/openai/v1", "alice-key"), sdk(base+"/openai/v1", "bob-key")
	_, err := bob.Responses.New(t.Context(), askResponse("bob continues", r.ID))
	wantNotFound(t, "bob continues alice's response from a ticket", err, "previous_response_id", "previous_response_not_found",
		"Previous response with id '"+r.ID+"' not found.")
	if got, err := alice.Responses.New(t.Context(), askResponse("alice continues", r.ID), option.WithHeader("llmfleet-route", "batch")); err != nil ||
		got.OutputText() != "Answer to: alice continues" {
		t.Errorf("alice continues from her ticket's response: %v", err)
	}
}
