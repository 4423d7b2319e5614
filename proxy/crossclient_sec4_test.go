package proxy_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/proxy"
)

// Refusals the held-key object check no longer makes (each test names
// one, which it made before): a client refused what is its own (or what names no
// object at all), on paths a client of the real APIs takes.

// Manual conversation state on the Responses API is "input += the last
// response's output" (openai-go v3.96.0 ResponseInputItemUnionParam:
// OfOutputMessage ResponseOutputMessageParam, whose output_text carries
// its annotations, OfFileCitation ResponseOutputTextAnnotationFileCitationParam
// {file_id, filename, index}; OfFileSearchCall
// ResponseFileSearchToolCallParam, whose results carry file_id). After a
// file_search, the message and the file_search_call handed back name the
// vector store's file, which is deliberately not recorded as the client's
// (TestHeldFileCitationNotOwned); the scan reads every "file_id" at any
// depth, so the client's second turn of its own conversation is a 404
// "No such File object" — whenever a file search cited anything.
func TestHeldGiveBackFileSearchOutput(t *testing.T) {
	do, _ := crossFake(t, func(w http.ResponseWriter, r *http.Request) {
		answerJSON(w, `{"id":"resp_a","object":"response","created_at":1,"status":"completed","model":"gpt-4.1","output":[`+
			`{"id":"fs_a","type":"file_search_call","status":"completed","queries":["handbook"],"results":[{"file_id":"file-operator","filename":"handbook.pdf","score":0.9,"text":"leave: 25 days"}]},`+
			`{"id":"msg_a","type":"message","role":"assistant","status":"completed","content":[{"type":"output_text","text":"25 days",`+
			`"annotations":[{"type":"file_citation","file_id":"file-operator","filename":"handbook.pdf","index":3}]}]}],`+
			`"usage":{"input_tokens":1,"output_tokens":1,"total_tokens":2}}`)
	})
	tools := `"tools":[{"type":"file_search","vector_store_ids":["vs_operator"]}]`
	code, b := do("POST", "ka", "/openai/v1/responses", `{"model":"gpt-4.1","input":"how many days of leave?",`+tools+`}`)
	if code != 200 {
		t.Fatalf("ka's search: %d %s", code, b)
	}
	var resp struct{ Output []json.RawMessage }
	json.Unmarshal([]byte(b), &resp)
	for name, items := range map[string][]json.RawMessage{
		"the message (file_citation annotation)": {resp.Output[1]},
		"the file_search_call (results)":         {resp.Output[0]},
	} {
		input := `[{"role":"user","content":"how many days of leave?"},`
		for _, it := range items {
			input += string(it) + ","
		}
		input += `{"role":"user","content":"and for part-timers?"}]`
		if code, b := do("POST", "ka", "/openai/v1/responses", `{"model":"gpt-4.1","input":`+input+`,`+tools+`}`); code != 200 {
			t.Errorf("ka gives back its own response's output, %s: %d %s, want 200", name, code, b)
		}
	}
}

// A client's own tool call, given back as the API requires (a tool_use
// block, then the tool_result), is read as if its input named objects:
// anthropic-sdk-go v1.84.0 ToolUseBlockParam.Input is `any` — the
// arguments of the client's own tool, which the API never dereferences.
// The scan reads "file_id" and "container" members at any depth, so a
// client whose tool takes a file_id (a Drive file) or a container (a
// Docker one) has every follow-up turn refused 404. The answer side
// already knows not to read a tool call's input (anthropicAnswerIDs).
func TestHeldGiveBackOwnToolUseInput(t *testing.T) {
	do, _ := crossFake(t, anthropicUp())
	for name, input := range map[string]string{
		"file_id":   `{"file_id":"1BxiMVs0XRA5nFMdKvBdBZjgmUUqptlbs74OgvE2upms"}`,
		"container": `{"container":"web-1","command":"tail -n 50 /var/log/nginx/error.log"}`,
	} {
		body := `{"model":"claude-sonnet-4-5","max_tokens":100,` +
			`"tools":[{"name":"ops","description":"x","input_schema":{"type":"object"}}],"messages":[` +
			`{"role":"user","content":"look at it"},` +
			`{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"ops","input":` + input + `}]},` +
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"ok"}]}]}`
		if code, b := do("POST", "ka", "/v1/messages", body); code != 200 {
			t.Errorf("ka's own tool call given back, input naming %s: %d %s, want 200", name, code, b)
		}
	}
}

// ticketsSubmitter batches every call and keeps its answer under a ticket
// (llmfleet.Tickets), answered by reply.
type ticketsSubmitter struct {
	fakeSubmitter
	mu     sync.Mutex
	stored map[string]*llmfleet.StoredRequest
}

func (f *ticketsSubmitter) Enqueue(ctx context.Context, _ time.Duration, req *llmfleet.Request) (string, error) {
	resp, err := f.reply(ctx, req)
	if err != nil {
		return "", err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stored == nil {
		f.stored = map[string]*llmfleet.StoredRequest{}
	}
	f.stored[req.ID] = &llmfleet.StoredRequest{ID: req.ID, Provider: "openai", Header: req.Header, Endpoint: req.Endpoint, Body: req.Body,
		State: llmfleet.RequestDone, Result: &llmfleet.StoredResult{StatusCode: 200, Body: resp.Body}}
	return req.ID, nil
}

func (f *ticketsSubmitter) Lookup(_ context.Context, id string, _ llmfleet.Credential) (*llmfleet.StoredRequest, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if sr, ok := f.stored[id]; ok {
		return sr, nil
	}
	return nil, llmfleet.ErrNotFound
}

// A chat's spoken answer is recorded as the client's when a batched
// answer is handed to a waiting caller (openAIFace.answer: recordAnswer,
// any endpoint), but a ticket's stored answer is recorded only for
// /v1/responses (openAIFace.stored: isResponses): a chat completion with
// audio fetched by its Prefer: respond-async ticket names an audio id its
// client is then refused to give back (ChatCompletionAssistantMessageParamAudio.ID).
func TestHeldTicketChatAudioGivenBack(t *testing.T) {
	audioAnswer := `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-audio","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":null,` +
		`"audio":{"id":"audio_ka1","data":"UklGRg==","expires_at":9999999999,"transcript":"hello"}}}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`
	sub := &ticketsSubmitter{}
	sub.reply = func(_ context.Context, req *llmfleet.Request) (*llmfleet.Response, error) {
		return &llmfleet.Response{Route: llmfleet.RouteBatch, StatusCode: 200, Body: []byte(audioAnswer), BatchID: "batch_1"}, nil
	}
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { answerJSON(w, audioAnswer) }))
	t.Cleanup(fake.Close)
	u, _ := url.Parse(fake.URL)
	keys := &proxy.ClientKeys{Upstream: llmfleet.Credential{APIKey: "ant"}, OpenAI: llmfleet.Credential{AuthToken: "oai"},
		Hashes: map[string]string{proxy.HashKey("ka"): "a", proxy.HashKey("kb"): "b"}}
	ts := httptest.NewServer((&proxy.Server{Submitter: sub, OpenAIUpstream: u, Credentials: keys.Map, OpenAICredentials: keys.MapOpenAI,
		ClientName: keys.Name, PingInterval: 10 * time.Millisecond}).Handler())
	t.Cleanup(ts.Close)
	do := func(method, path, body string, hdr ...string) (int, string) {
		return heldCall(t, ts, method, "ka", path, body, hdr...)
	}
	ask := `{"model":"gpt-audio","modalities":["text","audio"],"audio":{"voice":"alloy","format":"wav"},"messages":[{"role":"user","content":"say hello"}]}`
	code, b := do("POST", "/openai/v1/chat/completions", ask, "Prefer", "respond-async")
	var tk struct{ ID string }
	if code != 202 || json.Unmarshal([]byte(b), &tk) != nil {
		t.Fatalf("ka's async chat: %d %s", code, b)
	}
	code, b = do("GET", proxy.OpenAIRequestsPath+tk.ID, "")
	if code != 200 || !strings.Contains(b, "audio_ka1") {
		t.Fatalf("ka's ticket: %d %s", code, b)
	}
	back := `{"model":"gpt-audio","modalities":["text","audio"],"audio":{"voice":"alloy","format":"wav"},"messages":[{"role":"user","content":"say hello"},` +
		`{"role":"assistant","audio":{"id":"audio_ka1"}},{"role":"user","content":"again, slower"}]}`
	if code, b := do("POST", "/openai/v1/chat/completions", back, "llmfleet-route", "sync"); code != 200 {
		t.Errorf("ka gives back the spoken answer its own ticket handed it: %d %s, want 200", code, b)
	}
	// Control: the same answer through a waiting batched call is recorded.
	sub.reply = func(_ context.Context, req *llmfleet.Request) (*llmfleet.Response, error) {
		return &llmfleet.Response{Route: llmfleet.RouteBatch, StatusCode: 200, Body: []byte(strings.Replace(audioAnswer, "audio_ka1", "audio_ka2", 1)), BatchID: "batch_1"}, nil
	}
	if code, b := do("POST", "/openai/v1/chat/completions", ask, "llmfleet-route", "batch"); code != 200 || !strings.Contains(b, "audio_ka2") {
		t.Fatalf("ka's batched chat: %d %s", code, b)
	}
	if code, b := do("POST", "/openai/v1/chat/completions", strings.Replace(back, "audio_ka1", "audio_ka2", 1), "llmfleet-route", "sync"); code != 200 {
		t.Errorf("control, the waiting batched call's audio given back: %d %s", code, b)
	}
	// A streaming batched call's answer, synthesised as chunks, is
	// recorded as a waiting one's (openAIFace.endStream): its spoken
	// answer was refused when given back.
	sub.reply = func(_ context.Context, req *llmfleet.Request) (*llmfleet.Response, error) {
		return &llmfleet.Response{Route: llmfleet.RouteBatch, StatusCode: 200, Body: []byte(strings.Replace(audioAnswer, "audio_ka1", "audio_ka3", 1)), BatchID: "batch_1"}, nil
	}
	streamed := strings.Replace(ask, `"messages"`, `"stream":true,"messages"`, 1)
	if code, b := do("POST", "/openai/v1/chat/completions", streamed, "llmfleet-route", "batch"); code != 200 || !strings.Contains(b, "data:") {
		t.Fatalf("ka's streamed batched chat: %d %s", code, b)
	}
	if code, b := do("POST", "/openai/v1/chat/completions", strings.Replace(back, "audio_ka1", "audio_ka3", 1), "llmfleet-route", "sync"); code != 200 {
		t.Errorf("ka gives back the spoken answer of its streamed batched call: %d %s, want 200", code, b)
	}
}

// sseBody writes events as an event stream.
func sseBody(w http.ResponseWriter, events ...string) {
	w.Header().Set("Content-Type", "text/event-stream")
	for _, e := range events {
		io.WriteString(w, e+"\n\n")
	}
}

// Held (checks): a client's own objects named only in a stream's events,
// in the shapes the SDKs read (anthropic-sdk-go v1.84.0
// BetaRawMessageDeltaEventDelta.Container, content_block_start's
// BetaBashCodeExecutionToolResultBlock; openai-go v3.96.0
// ResponseOutputItemAddedEvent.Item, ChatCompletionChunkChoiceDeltaAudio.ID).
func TestHeldStreamsRecorded(t *testing.T) {
	do, _ := crossFake(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		switch {
		case r.URL.Path == "/v1/messages" && strings.Contains(string(b), "run-stream"):
			sseBody(w,
				"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_s1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-sonnet-4-5\",\"content\":[],\"container\":null,\"stop_reason\":null,\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}",
				"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"server_tool_use\",\"id\":\"srvtoolu_1\",\"name\":\"bash_code_execution\",\"input\":{}}}",
				"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}",
				"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"bash_code_execution_tool_result\",\"tool_use_id\":\"srvtoolu_1\",\"content\":{\"type\":\"bash_code_execution_result\",\"stdout\":\"\",\"stderr\":\"\",\"return_code\":0,\"content\":[{\"type\":\"bash_code_execution_output\",\"file_id\":\"file_s1\"}]}}}",
				"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}",
				"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"container\":{\"id\":\"container_s1\",\"expires_at\":\"2030-01-01T00:00:00Z\"},\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":2}}",
				"event: message_stop\ndata: {\"type\":\"message_stop\"}")
		case r.URL.Path == "/v1/responses" && strings.Contains(string(b), "run-stream"):
			sseBody(w,
				"event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_s1\",\"object\":\"response\",\"status\":\"in_progress\",\"output\":[]}}",
				"event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\",\"sequence_number\":1,\"output_index\":0,\"item\":{\"id\":\"ci_s1\",\"type\":\"code_interpreter_call\",\"status\":\"in_progress\",\"container_id\":\"cntr_s1\",\"code\":\"\",\"outputs\":null}}",
				"event: response.output_text.annotation.added\ndata: {\"type\":\"response.output_text.annotation.added\",\"sequence_number\":2,\"item_id\":\"msg_s1\",\"output_index\":1,\"content_index\":0,\"annotation_index\":0,\"annotation\":{\"type\":\"container_file_citation\",\"container_id\":\"cntr_s1\",\"file_id\":\"cfile_s1\",\"filename\":\"a.csv\",\"start_index\":0,\"end_index\":1}}",
				"event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\",\"sequence_number\":3,\"output_index\":1,\"item\":{\"id\":\"msg_s1\",\"type\":\"message\",\"role\":\"assistant\",\"status\":\"completed\",\"content\":[]}}")
		case r.URL.Path == "/v1/chat/completions" && strings.Contains(string(b), "run-stream"):
			sseBody(w,
				`data: {"id":"chatcmpl-s","object":"chat.completion.chunk","created":1,"model":"gpt-audio","choices":[{"index":0,"delta":{"role":"assistant","content":null}}]}`,
				`data: {"id":"chatcmpl-s","object":"chat.completion.chunk","created":1,"model":"gpt-audio","choices":[{"index":0,"delta":{"audio":{"id":"audio_s1","transcript":"hi","data":"AAAA","expires_at":9999999999}}}]}`,
				`data: [DONE]`)
		case r.URL.Path == "/v1/messages":
			anthropicUp()(w, r)
		default:
			answerJSON(w, `{"id":"resp_x","object":"response","status":"completed","output":[],"choices":[]}`)
		}
	})
	if code, b := do("POST", "ka", "/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"run-stream"}]}`); code != 200 {
		t.Fatalf("stream: %d %s", code, b)
	}
	do("POST", "ka", "/openai/v1/responses", `{"model":"gpt-4.1","stream":true,"input":"run-stream"}`)
	do("POST", "ka", "/openai/v1/chat/completions", `{"model":"gpt-audio","stream":true,"messages":[{"role":"user","content":"run-stream"}]}`)
	for _, c := range []struct{ path, body string }{
		{"/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":100,"container":"container_s1","messages":[{"role":"user","content":[{"type":"container_upload","file_id":"file_s1"}]}],"diagnostics":{"previous_message_id":"msg_s1"}}`},
		{"/openai/v1/responses", `{"model":"gpt-4.1","previous_response_id":"resp_s1","input":[{"type":"item_reference","id":"msg_s1"},{"type":"item_reference","id":"ci_s1"}],"tools":[{"type":"code_interpreter","container":"cntr_s1"}]}`},
		{"/openai/v1/chat/completions", `{"model":"gpt-audio","messages":[{"role":"user","content":"x"},{"role":"assistant","audio":{"id":"audio_s1"}}]}`},
	} {
		if code, b := do("POST", "ka", c.path, c.body); code != 200 {
			t.Errorf("ka names its own streamed objects in %s: %d %s", c.path, code, b)
		}
	}
}

// flakyOwners is an owners store whose writes fail while down is set.
type flakyOwners struct {
	mu   sync.Mutex
	m    map[string]string
	down bool
}

func (o *flakyOwners) RecordBatchOwner(_ context.Context, id, owner string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.down {
		return io.ErrUnexpectedEOF
	}
	if o.m == nil {
		o.m = map[string]string{}
	}
	if _, ok := o.m[id]; !ok {
		o.m[id] = owner
	}
	return nil
}

func (o *flakyOwners) BatchOwner(_ context.Context, id string) (string, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if owner, ok := o.m[id]; ok {
		return owner, nil
	}
	return "", llmfleet.ErrNotFound
}

func (o *flakyOwners) ForgetBatchOwner(_ context.Context, id string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.m, id)
	return nil
}

// An answer that passes while the owners store cannot be written is
// handed to its client all the same (logged: "naming it will be
// refused"), and nothing ever records it later: once the store is back,
// the client naming its own container is told, for good, that no such
// container exists (a 404, not the 503 + Retry-After a store failure is
// answered with elsewhere), though the container lives upstream and the
// client's code wrote into it.
func TestHeldOwnAnswerDuringStoreFailure(t *testing.T) {
	fake := httptest.NewServer(anthropicUp())
	t.Cleanup(fake.Close)
	u, _ := url.Parse(fake.URL)
	owners := &flakyOwners{down: true}
	keys := &proxy.ClientKeys{Upstream: llmfleet.Credential{APIKey: "ant"}, Hashes: map[string]string{proxy.HashKey("kb"): "b"}}
	ts := httptest.NewServer((&proxy.Server{Upstream: u, Credentials: keys.Map, ClientName: keys.Name, BatchOwners: owners}).Handler())
	t.Cleanup(ts.Close)
	do := func(body string) (int, string) { return heldCall(t, ts, "POST", "kb", "/v1/messages", body) }
	tools := `"tools":[{"type":"code_execution_20250825","name":"code_execution"}]`
	code, b := do(`{"model":"claude-sonnet-4-5","max_tokens":100,` + tools + `,"messages":[{"role":"user","content":"kb-run"}]}`)
	if code != 200 || !strings.Contains(b, "container_victim") {
		t.Fatalf("kb's call while the store is down: %d %s", code, b)
	}
	owners.mu.Lock()
	owners.down = false
	owners.mu.Unlock()
	code, b = do(`{"model":"claude-sonnet-4-5","max_tokens":100,"container":"container_victim",` + tools + `,"messages":[{"role":"user","content":"cat /tmp/outputs/payroll.csv"}]}`)
	if code != 200 {
		t.Errorf("kb reuses the container its own answer named, the store back up: %d %s, want 200 (or at worst a retryable 503 when it was handed out)", code, b)
	}
}

// The files a client's own code wrote are recorded as its own (its
// answers name them: anthropic-sdk-go v1.84.0
// BetaBashCodeExecutionOutputBlock.FileID; openai-go v3.96.0
// container_file_citation {container_id, file_id}), yet the only way the
// APIs give their bytes — Anthropic GET /v1/files/{id}/content, OpenAI GET
// /v1/containers/{cid}/files/{fid}/content — is a 403 for everyone in
// proxy-held-key mode: the owners book that gates a Gemini or OpenAI
// upload's download is not consulted. A client can name its output file
// in another call, never read it.
func TestHeldOwnCodeOutputFileDownload(t *testing.T) {
	up := anthropicUp()
	do, _ := crossFake(t, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasSuffix(r.URL.Path, "/content"):
			io.WriteString(w, "a,b\n1,2\n")
		case r.URL.Path == "/v1/responses":
			answerJSON(w, `{"id":"resp_c","object":"response","created_at":1,"status":"completed","model":"gpt-4.1","output":[`+
				`{"id":"ci_c","type":"code_interpreter_call","status":"completed","container_id":"cntr_c","code":"df.to_csv('out.csv')","outputs":[]},`+
				`{"id":"msg_c","type":"message","role":"assistant","status":"completed","content":[{"type":"output_text","text":"out.csv",`+
				`"annotations":[{"type":"container_file_citation","container_id":"cntr_c","file_id":"cfile_c","filename":"out.csv","start_index":0,"end_index":7}]}]}],`+
				`"usage":{"input_tokens":1,"output_tokens":1,"total_tokens":2}}`)
		default:
			up(w, r)
		}
	})
	tools := `"tools":[{"type":"code_execution_20250825","name":"code_execution"}]`
	do("POST", "kb", "/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":100,`+tools+`,"messages":[{"role":"user","content":"kb-run"}]}`)
	if code, b := do("GET", "kb", "/v1/files/file_victim/content", ""); code != 200 {
		t.Errorf("kb downloads the file its own code wrote (Anthropic): %d %s, want 200", code, b)
	}
	do("POST", "kb", "/openai/v1/responses", `{"model":"gpt-4.1","input":"make a csv","tools":[{"type":"code_interpreter","container":{"type":"auto"}}]}`)
	if code, b := do("GET", "kb", "/openai/v1/containers/cntr_c/files/cfile_c/content", ""); code != 200 {
		t.Errorf("kb downloads the file its own code wrote (OpenAI container file): %d %s, want 200", code, b)
	}
}
