package proxy_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// More ways around the held-key object check (heldrefs.go) that it closes:
// each test names one, which passed before it was closed.

// Chat Completions keeps a model's audio answer upstream for multi-turn
// use: an assistant message {"audio":{"id":...}} names "a previous audio
// response from the model" (openai-go v3.96.0
// ChatCompletionAssistantMessageParamAudio.ID; ChatCompletionAudio.ExpiresAt:
// "when this audio response will no longer be accessible on the server
// for use in multi-turn conversations"). The scan reads an "id" only in an
// item_reference or a Responses input item, and no chat answer is
// recorded, so ka's call carries kb's audio answer upstream.
func TestHeldChatAudioOfAnother(t *testing.T) {
	up := openAIUp()
	do, leaked := crossFake(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.URL.Path == "/v1/chat/completions" && strings.Contains(string(b), "kb-run") { // kb's spoken answer, kept upstream
			answerJSON(w, `{"id":"chatcmpl-kb","object":"chat.completion","created":1,"model":"gpt-4o-audio-preview","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":null,`+
				`"audio":{"id":"audio_victim","data":"UklGRg==","expires_at":9999999999,"transcript":"`+victimSecret+`"}}}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
			return
		}
		r.Body = io.NopCloser(strings.NewReader(string(b)))
		up(w, r)
	})
	if code, b := do("POST", "kb", "/openai/v1/chat/completions",
		`{"model":"gpt-4o-audio-preview","modalities":["text","audio"],"audio":{"voice":"alloy","format":"wav"},"messages":[{"role":"user","content":"kb-run"}]}`); code != 200 {
		t.Fatalf("kb's audio call: %d %s", code, b)
	}
	before := len(leaked())
	code, b := do("POST", "ka", "/openai/v1/chat/completions",
		`{"model":"gpt-4o-audio-preview","messages":[{"role":"user","content":"hi"},{"role":"assistant","audio":{"id":"audio_victim"}},{"role":"user","content":"repeat what you just said, as text"}]}`)
	wantRefused(t, "chat assistant message naming kb's audio answer", code, b, leaked()[before:])
	// kb gives its own back, recorded as its own from its answer.
	if code, b := do("POST", "kb", "/openai/v1/chat/completions",
		`{"model":"gpt-4o-audio-preview","messages":[{"role":"user","content":"hi"},{"role":"assistant","audio":{"id":"audio_victim"}},{"role":"user","content":"again"}]}`); code != 200 {
		t.Errorf("kb gives back its own audio: %d %s", code, b)
	}
}

// refsOf skips a member named "metadata" at any depth (ObjectsBut), not
// only a request's own metadata. A Responses prompt's variables are a map
// whose names the client chooses and whose values may be input files
// (openai-go v3.96.0 ResponsePromptParam.Variables:
// map[string]ResponsePromptVariableUnionParam, OfInputFile
// ResponseInputFileParam{file_id}): a variable named "metadata" carries
// kb's file unchecked, where one named otherwise is refused.
func TestHeldPromptVariableNamedMetadata(t *testing.T) {
	do, leaked := crossFake(t, openAIUp())
	do("POST", "kb", "/openai/v1/files", "x") // file-victim
	call := func(name string) (int, string) {
		return do("POST", "ka", "/openai/v1/responses",
			`{"model":"gpt-4.1","prompt":{"id":"pmpt_1","variables":{"`+name+`":{"type":"input_file","file_id":"file-victim"}}},"input":"summarise the document"}`)
	}
	before := len(leaked())
	if code, b := call("doc"); code != http.StatusNotFound || len(leaked()) != before {
		t.Fatalf("control, a variable named doc: %d %s", code, b)
	}
	code, b := call("metadata")
	wantRefused(t, "prompt variable named metadata holding kb's file", code, b, leaked()[before:])
}

// responseIDs records the file_id of every annotation of a response's
// output text as the caller's, a file_citation's too. A file_citation
// (openai-go v3.96.0 ResponseOutputTextAnnotationFileCitation: "A citation
// to a file") names a file of a vector store file_search read, which no
// client made (vector stores are not passed on in this mode: the
// operator's, shared by every client): the first client whose answer
// cites it becomes its owner, reads the whole file and may delete it,
// from every client's searches.
func TestHeldFileCitationNotOwned(t *testing.T) {
	var deleted bool
	do, _ := crossFake(t, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/v1/responses":
			answerJSON(w, `{"id":"resp_a","object":"response","created_at":1,"status":"completed","model":"gpt-4.1","output":[`+
				`{"id":"fs_a","type":"file_search_call","status":"completed","queries":["handbook"],"results":null},`+
				`{"id":"msg_a","type":"message","role":"assistant","status":"completed","content":[{"type":"output_text","text":"see the handbook",`+
				`"annotations":[{"type":"file_citation","file_id":"file-operator","filename":"handbook.pdf","index":3}]}]}],`+
				`"usage":{"input_tokens":1,"output_tokens":1,"total_tokens":2}}`)
		case r.URL.Path == "/v1/files/file-operator/content":
			io.WriteString(w, "OPERATOR-HANDBOOK")
		case r.URL.Path == "/v1/files/file-operator" && r.Method == http.MethodDelete:
			deleted = true
			answerJSON(w, `{"id":"file-operator","object":"file","deleted":true}`)
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	})
	if code, b := do("POST", "ka", "/openai/v1/responses",
		`{"model":"gpt-4.1","input":"what does the handbook say?","tools":[{"type":"file_search","vector_store_ids":["vs_operator"]}]}`); code != 200 {
		t.Fatalf("ka's search: %d %s", code, b)
	}
	if code, b := do("GET", "ka", "/openai/v1/files/file-operator/content", ""); code != http.StatusNotFound {
		t.Errorf("ka reads a vector store's file it only saw cited: %d %s, want 404", code, b)
	}
	if code, b := do("DELETE", "ka", "/openai/v1/files/file-operator", ""); code != http.StatusNotFound || deleted {
		t.Errorf("ka deletes a vector store's file it only saw cited: %d %s (deleted upstream: %v), want 404", code, b, deleted)
	}
}

// The Messages API answers the tool listing it fetched from a request's
// MCP server as a content block (anthropic-sdk-go v1.84.0
// BetaMCPToolListingBlock {"type":"mcp_tool_listing","mcp_server_name",
// "tools":[BetaMCPTool{name, description, input_schema map[string]any}]}:
// "A tool as an MCP server lists it"). The client runs that MCP server,
// so input_schema is whatever JSON it likes; anthropicAnswerIDs walks it
// (only input, arguments and action are pruned) and records any
// "file_id" or "container" in it as the client's, as
// TestHeldAnswerEchoNotOwned had a model echo them into a tool call.
func TestHeldMCPToolListingEchoNotOwned(t *testing.T) {
	up := anthropicUp()
	do, leaked := crossFake(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if strings.Contains(string(b), "mcp-run") {
			answerJSON(w, `{"id":"msg_a","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[`+
				`{"type":"mcp_tool_listing","mcp_server_name":"ka-tools","tools":[{"name":"lookup","description":"x","input_schema":`+
				`{"type":"object","properties":{"q":{"type":"string"}},"examples":[{"file_id":"file_victim","container":"container_victim"}]}}]},`+
				`{"type":"text","text":"ok"}],"container":null,"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}`)
			return
		}
		r.Body = io.NopCloser(strings.NewReader(string(b)))
		up(w, r)
	})
	if code, b := do("POST", "ka", "/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":100,`+
		`"mcp_servers":[{"type":"url","url":"https://mcp.ka.example/sse","name":"ka-tools"}],"messages":[{"role":"user","content":"mcp-run"}]}`); code != 200 {
		t.Fatalf("ka's MCP call: %d %s", code, b)
	}
	tools := `"tools":[{"type":"code_execution_20250825","name":"code_execution"}]`
	for name, body := range map[string]string{
		"document file_id": `{"model":"claude-sonnet-4-5","max_tokens":100,"messages":[{"role":"user","content":[{"type":"document","source":{"type":"file","file_id":"file_victim"}}]}]}`,
		"container":        `{"model":"claude-sonnet-4-5","max_tokens":100,"container":"container_victim",` + tools + `,"messages":[{"role":"user","content":"cat /tmp/outputs/payroll.csv"}]}`,
	} {
		before := len(leaked())
		code, b := do("POST", "ka", "/v1/messages", body)
		wantRefused(t, name+" its own MCP server's tool listing named", code, b, leaked()[before:])
	}
}
