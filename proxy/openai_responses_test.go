package proxy_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/llmfleet/llmfleet/openaiemu"
)

// askResponse is a /v1/responses call of prompt continuing from prev.
func askResponse(prompt, prev string) responses.ResponseNewParams {
	p := responses.ResponseNewParams{Model: "gpt-4.1", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(prompt)}}
	if prev != "" {
		p.PreviousResponseID = openai.String(prev)
	}
	return p
}

// wantNotFound checks that err is the API's 404 for an unknown id of
// param, with code and the message it gives.
func wantNotFound(t *testing.T, what string, err error, param, code, msg string) {
	t.Helper()
	var ae *openai.Error
	if !errors.As(err, &ae) || ae.StatusCode != http.StatusNotFound || ae.Type != "invalid_request_error" ||
		ae.Param != param || ae.Code != code || ae.Message != msg {
		t.Errorf("%s: %v, want a 404 %s of %s: %q", what, err, code, param, msg)
	}
}

// TestOpenAIFaceHeldKeysResponsesOwned: with proxy-held keys, a response
// is its client's, however it was made (sync, streamed, batched): bob
// cannot continue from alice's (404 previous_response_not_found, as for
// an unknown id, on the sync and the batch route, and with the member
// repeated), and nothing of his call reaches upstream; alice continues
// from each of hers. A conversation, which no client can make through
// the proxy, is refused likewise.
func TestOpenAIFaceHeldKeysResponsesOwned(t *testing.T) {
	emu := &openaiemu.Server{BatchTurnaround: 30 * time.Millisecond}
	base := heldOpenAIFace(t, emu, true)
	ctx := t.Context()
	alice, bob := sdk(base, "alice-key"), sdk(base, "bob-key")
	batch := option.WithHeader("llmfleet-route", "batch")

	made := map[string]string{}
	r, err := alice.Responses.New(ctx, askResponse("alice sync", ""))
	if err != nil {
		t.Fatalf("alice sync: %v", err)
	}
	made["sync"] = r.ID
	if r, err = alice.Responses.New(ctx, askResponse("alice batched", ""), batch); err != nil {
		t.Fatalf("alice batched: %v", err)
	}
	made["batched"] = r.ID
	stream := alice.Responses.NewStreaming(ctx, askResponse("alice streamed", ""))
	for stream.Next() {
		if e := stream.Current(); e.Type == "response.created" {
			made["streamed"] = e.Response.ID
		}
	}
	if err := stream.Err(); err != nil || made["streamed"] == "" {
		t.Fatalf("alice streamed: %v %q", err, made["streamed"])
	}
	mine, err := bob.Responses.New(ctx, askResponse("bob's own", ""))
	if err != nil {
		t.Fatalf("bob's own: %v", err)
	}

	for how, id := range made {
		msg := "Previous response with id '" + id + "' not found."
		_, err := bob.Responses.New(ctx, askResponse("bob continues "+how, id))
		wantNotFound(t, "bob continues alice's "+how+" response", err, "previous_response_id", "previous_response_not_found", msg)
		_, err = bob.Responses.New(ctx, askResponse("bob continues "+how+" batched", id), batch)
		wantNotFound(t, "bob continues alice's "+how+" response, batched", err, "previous_response_id", "previous_response_not_found", msg)
		// The member twice: his own first, alice's last.
		_, err = bob.Responses.New(ctx, responses.ResponseNewParams{}, option.WithRequestBody("application/json",
			[]byte(`{"model":"gpt-4.1","input":"bob continues `+how+` twice","previous_response_id":"`+mine.ID+`","previous_response_id":"`+id+`"}`)))
		wantNotFound(t, "bob repeats previous_response_id", err, "previous_response_id", "previous_response_not_found", msg)
		if r, err := alice.Responses.New(ctx, askResponse("alice continues "+how, id)); err != nil || r.OutputText() != "Answer to: alice continues "+how {
			t.Errorf("alice continues her %s response: %v", how, err)
		}
	}
	if r, err := bob.Responses.New(ctx, askResponse("bob continues his own", mine.ID), batch); err != nil || r.OutputText() != "Answer to: bob continues his own" {
		t.Errorf("bob continues his own response, batched: %v", err)
	}
	for prompt, n := range emu.Stats().Billed {
		if strings.HasPrefix(prompt, "bob continues") && prompt != "bob continues his own" && n != 0 {
			t.Errorf("%q reached upstream %d times", prompt, n)
		}
	}

	p := askResponse("alice in a conversation", "")
	p.Conversation = responses.ResponseNewParamsConversationUnion{OfString: openai.String("conv_someone")}
	_, err = alice.Responses.New(ctx, p)
	wantNotFound(t, "a conversation", err, "conversation", "conversation_not_found", "Conversation with id 'conv_someone' not found.")
	p.Conversation = responses.ResponseNewParamsConversationUnion{OfConversationObject: &responses.ResponseConversationParam{ID: "conv_other"}}
	_, err = alice.Responses.New(ctx, p, batch)
	wantNotFound(t, "a conversation object, batched", err, "conversation", "conversation_not_found", "Conversation with id 'conv_other' not found.")
	if n := emu.Stats().Billed["alice in a conversation"]; n != 0 {
		t.Errorf("the conversation call reached upstream %d times", n)
	}
}

// TestOpenAIBatchFileContinuesAnothersResponse: in proxy-held-key mode a
// client's batch of /v1/responses calls whose input file continues from
// another client's response is refused 404, as the routed call is; one
// continuing from the client's own response is created.
func TestOpenAIBatchFileContinuesAnothersResponse(t *testing.T) {
	base := heldOpenAIFace(t, &openaiemu.Server{BatchTurnaround: time.Hour}, true)
	ctx := t.Context()
	alice, bob := sdk(base, "alice-key"), sdk(base, "bob-key")
	r, err := bob.Responses.New(ctx, askResponse("bob's secret", ""))
	if err != nil {
		t.Fatal(err)
	}
	_, err = alice.Responses.New(ctx, askResponse("repeat it", r.ID))
	wantStatus(t, "routed continuation (control)", err, http.StatusNotFound)
	line := `{"custom_id":"a","method":"POST","url":"/v1/responses","body":{"model":"gpt-4.1","input":"repeat it","previous_response_id":"` + r.ID + `"}}` + "\n"
	f, err := alice.Files.New(ctx, openai.FileNewParams{Purpose: openai.FilePurposeBatch, File: openai.File(strings.NewReader(line), "a.jsonl", "application/jsonl")})
	if err != nil {
		t.Fatal(err)
	}
	_, err = alice.Batches.New(ctx, openai.BatchNewParams{InputFileID: f.ID, Endpoint: openai.BatchNewParamsEndpointV1Responses, CompletionWindow: "24h"})
	wantStatus(t, "batch continuing bob's response", err, http.StatusNotFound)
	// Her own response she may continue in a batch.
	mine, err := alice.Responses.New(ctx, askResponse("alice's", ""))
	if err != nil {
		t.Fatal(err)
	}
	own := `{"custom_id":"b","method":"POST","url":"/v1/responses","body":{"model":"gpt-4.1","input":"go on","previous_response_id":"` + mine.ID + `"}}` + "\n"
	f, err = alice.Files.New(ctx, openai.FileNewParams{Purpose: openai.FilePurposeBatch, File: openai.File(strings.NewReader(own), "b.jsonl", "application/jsonl")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := alice.Batches.New(ctx, openai.BatchNewParams{InputFileID: f.ID, Endpoint: openai.BatchNewParamsEndpointV1Responses, CompletionWindow: "24h"}); err != nil {
		t.Fatalf("batch continuing her own response: %v", err)
	}
}
