package proxy_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/openaiemu"
	"github.com/llmfleet/llmfleet/proxy"
)

// heldOpenAIFace is openAIFace in proxy-held-key mode: the emulator takes
// only the proxy's OpenAI key, clients present keys of the proxy's own
// (alice-key, bob-key). openAIKey false leaves the OpenAI face closed.
func heldOpenAIFace(t *testing.T, emu *openaiemu.Server, openAIKey bool, observe ...func(llmfleet.LedgerEntry)) string {
	t.Helper()
	emu.Keys = []string{"sk-proxy-openai"}
	d, u := openAIEngine(t, emu)
	keys := &proxy.ClientKeys{Upstream: llmfleet.Credential{APIKey: "sk-ant-proxy"},
		Hashes: map[string]string{proxy.HashKey("alice-key"): "alice", proxy.HashKey("bob-key"): "bob"}}
	srv := &proxy.Server{Submitter: d, OpenAIUpstream: u, Credentials: keys.Map, ClientName: keys.Name}
	if len(observe) > 0 {
		srv.Observe = observe[0]
	}
	if openAIKey {
		keys.OpenAI = llmfleet.Credential{AuthToken: "sk-proxy-openai"}
		srv.OpenAICredentials = keys.MapOpenAI
	}
	ps := httptest.NewServer(srv.Handler())
	t.Cleanup(ps.Close)
	return ps.URL + "/openai/v1"
}

func wantStatus(t *testing.T, what string, err error, status int) {
	t.Helper()
	var ae *openai.Error
	if !errors.As(err, &ae) || ae.StatusCode != status {
		t.Errorf("%s: %v, want a %d", what, err, status)
	}
}

// TestOpenAIFaceHeldKeys: with proxy-held keys, openai-go clients present
// the proxy's own keys; every call goes upstream with the proxy's OpenAI
// key (the emulator takes no other), routed and batched calls alike; an
// unknown key is a 401; files and batches made through the face are their
// maker's alone: another client gets 404 for them, never lists them, and
// cannot batch another's file.
func TestOpenAIFaceHeldKeys(t *testing.T) {
	emu := &openaiemu.Server{BatchTurnaround: 30 * time.Millisecond}
	base := heldOpenAIFace(t, emu, true)
	ctx := t.Context()
	alice, bob := sdk(base, "alice-key"), sdk(base, "bob-key")

	cc, err := alice.Chat.Completions.New(ctx, ask("held sync"))
	if err != nil || cc.Choices[0].Message.Content != "Answer to: held sync" {
		t.Fatalf("sync through a held key: %v %+v", err, cc)
	}
	cc, err = bob.Chat.Completions.New(ctx, ask("held batched"), option.WithHeader("llmfleet-route", "batch"))
	if err != nil || cc.Choices[0].Message.Content != "Answer to: held batched" {
		t.Fatalf("batched through a held key: %v %+v", err, cc)
	}
	upKey, mallory := sdk(base, "sk-proxy-openai"), sdk(base, "mallory-key")
	_, err = upKey.Chat.Completions.New(ctx, ask("the upstream key itself"))
	wantStatus(t, "the proxy's own upstream key presented", err, http.StatusUnauthorized)
	_, err = mallory.Models.List(ctx)
	wantStatus(t, "an unknown key on a pass-through path", err, http.StatusUnauthorized)
	// Admitted and passed through: the emulator has no models endpoint.
	_, err = alice.Models.List(ctx)
	wantStatus(t, "a pass-through path", err, http.StatusNotFound)
	// What the API keeps under the shared key, other than files, batches
	// and a client's own responses, is not passed on: stored completions,
	// jobs. Another's response is unknown.
	_, err = alice.Chat.Completions.List(ctx, openai.ChatCompletionListParams{})
	wantStatus(t, "listing stored chat completions", err, http.StatusForbidden)
	_, err = alice.Responses.Get(ctx, "resp_someone_elses", responses.ResponseGetParams{})
	wantStatus(t, "reading another's stored response", err, http.StatusNotFound)
	_, err = alice.FineTuning.Jobs.List(ctx, openai.FineTuningJobListParams{})
	wantStatus(t, "listing fine-tuning jobs", err, http.StatusForbidden)

	f, err := alice.Files.New(ctx, openai.FileNewParams{Purpose: openai.FilePurposeBatch,
		File: openai.File(strings.NewReader(`{"custom_id":"a1","method":"POST","url":"/v1/chat/completions","body":{"model":"gpt-4.1","messages":[{"role":"user","content":"alice's line"}]}}`+"\n"), "a.jsonl", "application/jsonl")})
	if err != nil {
		t.Fatalf("upload: %v", err)
	}
	_, err = bob.Batches.New(ctx, openai.BatchNewParams{InputFileID: f.ID, Endpoint: openai.BatchNewParamsEndpointV1ChatCompletions, CompletionWindow: "24h"})
	wantStatus(t, "bob batching alice's file", err, http.StatusNotFound)
	b, err := alice.Batches.New(ctx, openai.BatchNewParams{InputFileID: f.ID, Endpoint: openai.BatchNewParamsEndpointV1ChatCompletions, CompletionWindow: "24h"})
	if err != nil {
		t.Fatalf("batch create: %v", err)
	}
	_, err = bob.Batches.Get(ctx, b.ID)
	wantStatus(t, "bob reading alice's batch", err, http.StatusNotFound)
	_, err = bob.Batches.Cancel(ctx, b.ID)
	wantStatus(t, "bob cancelling alice's batch", err, http.StatusNotFound)
	_, err = bob.Files.Get(ctx, f.ID)
	wantStatus(t, "bob reading alice's file", err, http.StatusNotFound)
	_, err = bob.Files.Delete(ctx, f.ID)
	wantStatus(t, "bob deleting alice's file", err, http.StatusNotFound)

	for name, c := range map[string]openai.Client{"alice": alice, "bob": bob} {
		page, err := c.Batches.List(ctx, openai.BatchListParams{})
		if err != nil {
			t.Fatalf("%s lists batches: %v", name, err)
		}
		mine := false
		for _, x := range page.Data {
			if x.ID == b.ID {
				mine = true
			}
		}
		if mine != (name == "alice") {
			t.Errorf("%s's list shows alice's batch: %v", name, mine)
		}
		files, err := c.Files.List(ctx, openai.FileListParams{})
		if err != nil {
			t.Fatalf("%s lists files: %v", name, err)
		}
		for _, x := range files.Data {
			if name == "bob" && x.ID == f.ID {
				t.Errorf("bob's list shows alice's file")
			}
		}
	}

	var done *openai.Batch
	for range 200 {
		if done, err = alice.Batches.Get(ctx, b.ID); err != nil {
			t.Fatal(err)
		}
		if done.Status == openai.BatchStatusCompleted {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if done.Status != openai.BatchStatusCompleted || done.OutputFileID == "" {
		t.Fatalf("alice's batch: %+v", done)
	}
	res, err := alice.Files.Content(ctx, done.OutputFileID)
	if err != nil {
		t.Fatalf("alice reads her batch's output: %v", err)
	}
	out, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if !strings.Contains(string(out), "Answer to: alice's line") {
		t.Errorf("alice's output file: %s", out)
	}
	_, err = bob.Files.Content(ctx, done.OutputFileID)
	wantStatus(t, "bob reading alice's output file", err, http.StatusNotFound)
}

// TestOpenAIFaceHeldKeysClosed: proxy-held keys without an OpenAI key
// close the OpenAI face with a 403 in its envelope.
func TestOpenAIFaceHeldKeysClosed(t *testing.T) {
	base := heldOpenAIFace(t, &openaiemu.Server{}, false)
	c := sdk(base, "alice-key")
	_, err := c.Chat.Completions.New(t.Context(), ask("closed"))
	wantStatus(t, "the closed face", err, http.StatusForbidden)
}
