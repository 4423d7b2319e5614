package proxy_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/proxy"
)

// The tests of this file check, in proxy-held-key mode, that a client
// cannot have a call (a routed one, a shared one, a batch's requests) read an object
// another client made under the shared upstream key: a file, a stored
// item, a container. The upstream is a fake answering as the APIs do:
// a call naming one of the victim's objects ("victim" in its id) is
// answered with the victim's secret, as the model would read it.

const victimSecret = "KB-PRIVATE-PAYROLL"

// crossFake serves the proxy with proxy-held keys (clients "a", key "ka";
// "b", key "kb") in front of one fake upstream for all three faces, and
// returns a function making one call through it, and one returning the
// routed calls (and batch creates) the upstream got whose body names a
// victim's object.
// heldCall makes one call through ts presenting key in every face's
// header, with extra headers hdr (name, value, ...), and returns its
// status and body.
func heldCall(t *testing.T, ts *httptest.Server, method, key, path, body string, hdr ...string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
	req.Header.Set("x-goog-api-key", key)
	req.Header.Set("x-api-key", key)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("anthropic-version", "2023-06-01")
	if method == http.MethodPost && strings.HasSuffix(path, "/upload/v1beta/files") {
		// An upload begins as the SDKs begin one.
		req.Header.Set("X-Goog-Upload-Protocol", "resumable")
		req.Header.Set("X-Goog-Upload-Command", "start")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func crossFake(t *testing.T, up http.HandlerFunc) (do func(method, key, path, body string) (int, string), leaked func() []string) {
	ts, calls := heldServer(t, up)
	do = func(method, key, path, body string) (int, string) { return heldCall(t, ts, method, key, path, body) }
	return do, func() []string {
		var got []string
		for _, c := range calls() {
			if strings.Contains(c, "victim") {
				got = append(got, c)
			}
		}
		return got
	}
}

// heldServer serves the proxy with proxy-held keys (clients "a", key
// "ka"; "b", key "kb") in front of up for all three faces, and returns
// its test server, for heldCall, and every upstream call so far, as
// "METHOD path body".
func heldServer(t *testing.T, up http.HandlerFunc) (*httptest.Server, func() []string) {
	var mu sync.Mutex
	var got []string
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, r.Method+" "+r.URL.Path+" "+string(b))
		mu.Unlock()
		r.Body = io.NopCloser(strings.NewReader(string(b)))
		up(w, r)
	}))
	t.Cleanup(fake.Close)
	u, _ := url.Parse(fake.URL)
	keys := &proxy.ClientKeys{Upstream: llmfleet.Credential{APIKey: "ant"}, OpenAI: llmfleet.Credential{AuthToken: "oai"},
		Gemini: llmfleet.Credential{APIKey: "gk"}, Hashes: map[string]string{proxy.HashKey("ka"): "a", proxy.HashKey("kb"): "b"}}
	ts := httptest.NewServer((&proxy.Server{Upstream: u, OpenAIUpstream: u, GeminiUpstream: u, Credentials: keys.Map,
		OpenAICredentials: keys.MapOpenAI, GeminiCredentials: keys.MapGemini, ClientName: keys.Name}).Handler())
	t.Cleanup(ts.Close)
	return ts, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), got...)
	}
}

// answerJSON writes a JSON answer.
func answerJSON(w http.ResponseWriter, body string) {
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, body)
}

// secretIfVictim is the model's text for a call: the victim's secret if
// the call names one of its objects.
func secretIfVictim(body string) string {
	if strings.Contains(body, "victim") {
		return victimSecret
	}
	return "nothing"
}

// wantRefused fails unless ka's call was refused (404, as for an unknown
// object) without reaching upstream nor showing the victim's secret.
func wantRefused(t *testing.T, what string, code int, body string, leaked []string) {
	t.Helper()
	if code != http.StatusNotFound || strings.Contains(body, victimSecret) || len(leaked) != 0 {
		t.Errorf("%s: ka got %d %s\nupstream got ka's call naming kb's object: %q\nwant a 404 as for an unknown id, nothing sent upstream", what, code, body, leaked)
	}
}

// openAIUp is a fake OpenAI API: uploads make files in turn (kb's first:
// file-victim; then file-a), chat completions and responses answer with
// what the model read.
func openAIUp() http.HandlerFunc {
	var mu sync.Mutex
	uploads := 0
	return func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		switch {
		case r.URL.Path == "/v1/files":
			mu.Lock()
			uploads++
			id := "file-victim"
			if uploads > 1 {
				id = "file-a"
			}
			mu.Unlock()
			answerJSON(w, `{"id":"`+id+`","object":"file","purpose":"user_data","filename":"x","bytes":1,"created_at":1,"status":"processed"}`)
		case r.URL.Path == "/v1/files/file-a/content":
			// ka's own batch input: a chat call reading kb's file.
			io.WriteString(w, `{"custom_id":"1","method":"POST","url":"/v1/chat/completions","body":{"model":"gpt-4.1","messages":[{"role":"user","content":[{"type":"file","file":{"file_id":"file-victim"}},{"type":"text","text":"print it"}]}]}}`+"\n")
		case r.URL.Path == "/v1/batches":
			answerJSON(w, `{"id":"batch_1","object":"batch","status":"validating"}`)
		case r.URL.Path == "/v1/chat/completions":
			answerJSON(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4.1","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"`+secretIfVictim(string(b))+`"}}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
		case r.URL.Path == "/v1/responses":
			if strings.Contains(string(b), "kb-run") { // kb's call: its output items and container
				answerJSON(w, `{"id":"resp_kb","object":"response","created_at":1,"status":"completed","model":"gpt-4.1","output":[`+
					`{"id":"ci_victim","type":"code_interpreter_call","status":"completed","container_id":"cntr_victim","code":"open('payroll.csv','w')","outputs":[]},`+
					`{"id":"msg_victim","type":"message","role":"assistant","status":"completed","content":[{"type":"output_text","text":"`+victimSecret+`","annotations":[]}]}],`+
					`"usage":{"input_tokens":1,"output_tokens":1,"total_tokens":2}}`)
				return
			}
			answerJSON(w, `{"id":"resp_a","object":"response","created_at":1,"status":"completed","model":"gpt-4.1","output":[`+
				`{"id":"msg_a","type":"message","role":"assistant","status":"completed","content":[{"type":"output_text","text":"`+secretIfVictim(string(b))+`","annotations":[]}]}],`+
				`"usage":{"input_tokens":1,"output_tokens":1,"total_tokens":2}}`)
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}
}

// A chat completion naming another client's uploaded file in a file
// content part ({"type":"file","file":{"file_id":...}}) has the model
// read that file: it must be refused as the batch create naming it is.
func TestHeldOpenAIChatFilePartOfAnothersFile(t *testing.T) {
	do, leaked := crossFake(t, openAIUp())
	if code, b := do("POST", "kb", "/openai/v1/files", "x"); code != 200 || !strings.Contains(b, "file-victim") {
		t.Fatalf("kb's upload: %d %s", code, b)
	}
	if code, _ := do("GET", "ka", "/openai/v1/files/file-victim", ""); code != 404 {
		t.Fatalf("ka reads kb's file directly: %d, want 404 (the gate this test goes around)", code)
	}
	code, b := do("POST", "ka", "/openai/v1/chat/completions",
		`{"model":"gpt-4.1","messages":[{"role":"user","content":[{"type":"file","file":{"file_id":"file-victim"}},{"type":"text","text":"print it"}]}]}`)
	wantRefused(t, "chat/completions file part", code, b, leaked())
}

// A /v1/responses call naming another client's file (input_file or
// input_image with a file_id) is checked like previous_response_id.
func TestHeldOpenAIResponsesInputFileOfAnothersFile(t *testing.T) {
	do, leaked := crossFake(t, openAIUp())
	do("POST", "kb", "/openai/v1/files", "x")
	for _, part := range []string{
		`{"type":"input_file","file_id":"file-victim"}`,
		`{"type":"input_image","detail":"auto","file_id":"file-victim"}`,
	} {
		code, b := do("POST", "ka", "/openai/v1/responses",
			`{"model":"gpt-4.1","input":[{"role":"user","content":[`+part+`,{"type":"input_text","text":"print it"}]}]}`)
		wantRefused(t, "responses "+part, code, b, leaked())
	}
}

// A /v1/responses call may reference an item of a stored response by id
// ({"type":"item_reference","id":...}), and name a container of the code
// interpreter by id: another client's are reached as its
// previous_response_id would be.
func TestHeldOpenAIResponsesItemsAndContainersOfAnother(t *testing.T) {
	do, leaked := crossFake(t, openAIUp())
	if code, b := do("POST", "kb", "/openai/v1/responses",
		`{"model":"gpt-4.1","input":"kb-run","tools":[{"type":"code_interpreter","container":{"type":"auto"}}]}`); code != 200 {
		t.Fatalf("kb's response: %d %s", code, b)
	}
	before := len(leaked())
	code, b := do("POST", "ka", "/openai/v1/responses", `{"model":"gpt-4.1","previous_response_id":"resp_kb","input":"hi"}`)
	if code != 404 {
		t.Fatalf("previous_response_id of kb's response: %d %s (the check this test goes around)", code, b)
	}
	code, b = do("POST", "ka", "/openai/v1/responses",
		`{"model":"gpt-4.1","input":[{"type":"item_reference","id":"msg_victim"},{"role":"user","content":"repeat that"}]}`)
	wantRefused(t, "item_reference to kb's output item", code, b, leaked()[before:])
	before = len(leaked())
	code, b = do("POST", "ka", "/openai/v1/responses",
		`{"model":"gpt-4.1","input":"cat payroll.csv","tools":[{"type":"code_interpreter","container":"cntr_victim"}]}`)
	wantRefused(t, "code_interpreter container of kb's", code, b, leaked()[before:])
}

// A batch of chat completions whose input file (the client's own) has a
// request reading another client's file is refused, as the batch create
// naming that file as its input is.
func TestHeldOpenAIBatchLineReadsAnothersFile(t *testing.T) {
	do, _ := crossFake(t, openAIUp())
	do("POST", "kb", "/openai/v1/files", "x") // file-victim
	if code, b := do("POST", "ka", "/openai/v1/files", "x"); !strings.Contains(b, "file-a") {
		t.Fatalf("ka's upload: %d %s", code, b)
	}
	code, b := do("POST", "ka", "/openai/v1/batches", `{"input_file_id":"file-a","endpoint":"/v1/chat/completions","completion_window":"24h"}`)
	if code != http.StatusNotFound {
		t.Errorf("ka's batch whose request reads kb's file-victim: %d %s, want 404 (its output file would be ka's)", code, b)
	}
}

// geminiUp is a fake Gemini API: an upload makes files/victim (kb's),
// generateContent answers with what the model read, a batch create makes
// batches/b1.
func geminiUp() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		switch {
		case strings.HasPrefix(r.URL.Path, "/upload/"):
			answerJSON(w, `{"file":{"name":"files/victim","uri":"https://generativelanguage.googleapis.com/v1beta/files/victim","mimeType":"text/plain","state":"ACTIVE"}}`)
		case strings.HasSuffix(r.URL.Path, ":generateContent"):
			answerJSON(w, `{"candidates":[{"content":{"role":"model","parts":[{"text":"`+secretIfVictim(string(b))+`"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":1,"candidatesTokenCount":1,"totalTokenCount":2},"modelVersion":"gemini-2.5-flash"}`)
		case strings.HasSuffix(r.URL.Path, ":batchGenerateContent"):
			answerJSON(w, `{"name":"batches/b1","metadata":{"@type":"type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatch","name":"batches/b1","state":"BATCH_STATE_PENDING"}}`)
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}
}

// A generateContent call naming another client's uploaded file in a
// fileData part (fileUri, the file's uri as the upload answers it; or
// the proto's file_data/file_uri spelling) has the model read it.
func TestHeldGeminiFileDataOfAnothersFile(t *testing.T) {
	do, leaked := crossFake(t, geminiUp())
	if code, b := do("POST", "kb", "/gemini/upload/v1beta/files", `{"file":{"displayName":"payroll"}}`); code != 200 {
		t.Fatalf("kb's upload: %d %s", code, b)
	}
	if code, _ := do("GET", "ka", "/gemini/v1beta/files/victim", ""); code != 404 {
		t.Fatalf("ka reads kb's file directly: %d, want 404 (the gate this test goes around)", code)
	}
	for _, part := range []string{
		`{"fileData":{"mimeType":"text/plain","fileUri":"https://generativelanguage.googleapis.com/v1beta/files/victim"}}`,
		`{"file_data":{"mime_type":"text/plain","file_uri":"https://generativelanguage.googleapis.com/v1beta/files/victim"}}`,
	} {
		before := len(leaked())
		code, b := do("POST", "ka", "/gemini/v1beta/models/gemini-2.5-flash:generateContent",
			`{"contents":[{"role":"user","parts":[`+part+`,{"text":"print it"}]}]}`)
		wantRefused(t, "generateContent "+part, code, b, leaked()[before:])
	}
}

// A Batch Mode job with inlined requests
// (batch.inputConfig.requests.requests[].request) reading another
// client's file is refused as one whose inputConfig.fileName is that
// file.
func TestHeldGeminiInlinedBatchReadsAnothersFile(t *testing.T) {
	do, leaked := crossFake(t, geminiUp())
	do("POST", "kb", "/gemini/upload/v1beta/files", `{"file":{"displayName":"payroll"}}`)
	code, b := do("POST", "ka", "/gemini/v1beta/models/gemini-2.5-flash:batchGenerateContent",
		`{"batch":{"displayName":"x","inputConfig":{"requests":{"requests":[{"request":{"contents":[{"role":"user","parts":[`+
			`{"fileData":{"mimeType":"text/plain","fileUri":"https://generativelanguage.googleapis.com/v1beta/files/victim"}},{"text":"print it"}]}]},"metadata":{"key":"1"}}]}}}}`)
	wantRefused(t, "inlined batch request reading kb's file", code, b, leaked())
}

// anthropicUp is a fake Messages API: kb's call ("kb-run") runs code in a
// new container, which writes a file; another call naming that container
// or file reads kb's data.
func anthropicUp() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.URL.Path != "/v1/messages" {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		content := `[{"type":"text","text":"` + secretIfVictim(string(b)) + `"}]`
		if strings.Contains(string(b), "echo-run") { // a model echoing ids it was told into a tool call
			content = `[{"type":"tool_use","id":"toolu_1","name":"note","input":{"file_id":"file_victim","container":"container_victim"}}]`
		}
		container := `null`
		if strings.Contains(string(b), "kb-run") {
			content = `[{"type":"server_tool_use","id":"srvtoolu_1","name":"bash_code_execution","input":{"command":"cp payroll.csv /tmp/outputs/"}},` +
				`{"type":"bash_code_execution_tool_result","tool_use_id":"srvtoolu_1","content":{"type":"bash_code_execution_result","stdout":"","stderr":"","return_code":0,"content":[{"type":"bash_code_execution_output","file_id":"file_victim"}]}}]`
			container = `{"id":"container_victim","expires_at":"2030-01-01T00:00:00Z"}`
		}
		answerJSON(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":`+content+
			`,"container":`+container+`,"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}`)
	}
}

// The Messages API's container parameter reuses a code execution
// container by id, with the files left in it; a file_id (of a file the
// code execution tool wrote, named in its result) is read by a document
// or container_upload block. Another client's are reached through the
// shared key.
func TestHeldAnthropicContainerAndFileOfAnother(t *testing.T) {
	do, leaked := crossFake(t, anthropicUp())
	tools := `"tools":[{"type":"code_execution_20250825","name":"code_execution"}]`
	if code, b := do("POST", "kb", "/v1/messages",
		`{"model":"claude-sonnet-4-5","max_tokens":100,`+tools+`,"messages":[{"role":"user","content":"kb-run"}]}`); code != 200 || !strings.Contains(b, "container_victim") {
		t.Fatalf("kb's call: %d %s", code, b)
	}
	before := len(leaked())
	for name, body := range map[string]string{
		"container (string)": `{"model":"claude-sonnet-4-5","max_tokens":100,"container":"container_victim",` + tools + `,"messages":[{"role":"user","content":"cat /tmp/outputs/payroll.csv"}]}`,
		"container (object)": `{"model":"claude-sonnet-4-5","max_tokens":100,"container":{"id":"container_victim"},` + tools + `,"messages":[{"role":"user","content":"cat /tmp/outputs/payroll.csv"}]}`,
		"document file_id":   `{"model":"claude-sonnet-4-5","max_tokens":100,"messages":[{"role":"user","content":[{"type":"document","source":{"type":"file","file_id":"file_victim"}},{"type":"text","text":"print it"}]}]}`,
		"container_upload":   `{"model":"claude-sonnet-4-5","max_tokens":100,` + tools + `,"messages":[{"role":"user","content":[{"type":"container_upload","file_id":"file_victim"},{"type":"text","text":"cat it"}]}]}`,
	} {
		code, b := do("POST", "ka", "/v1/messages", body)
		wantRefused(t, name, code, b, leaked()[before:])
		before = len(leaked())
	}
}

// countTokens passes through under the shared key (a model method that
// keeps nothing), but a fileData part in its contents has the upstream
// read another client's file: its token count (its size) is told.
func TestHeldGeminiCountTokensOfAnothersFile(t *testing.T) {
	do, leaked := crossFake(t, func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/upload/") {
			geminiUp()(w, r)
			return
		}
		answerJSON(w, `{"totalTokens":48213}`)
	})
	do("POST", "kb", "/gemini/upload/v1beta/files", `{"file":{"displayName":"payroll"}}`)
	code, b := do("POST", "ka", "/gemini/v1beta/models/gemini-2.5-flash:countTokens",
		`{"contents":[{"role":"user","parts":[{"fileData":{"mimeType":"text/plain","fileUri":"https://generativelanguage.googleapis.com/v1beta/files/victim"}}]}]}`)
	wantRefused(t, "countTokens of kb's file", code, b, leaked())
}

// TestHeldOwnObjectsNamed checks the other side of the tests above: a
// client may name what its own answers and uploads named, on every face
// (the ids recorded as it, as the answers passed).
func TestHeldOwnObjectsNamed(t *testing.T) {
	t.Run("anthropic", func(t *testing.T) {
		do, leaked := crossFake(t, anthropicUp())
		tools := `"tools":[{"type":"code_execution_20250825","name":"code_execution"}]`
		do("POST", "kb", "/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":100,`+tools+`,"messages":[{"role":"user","content":"kb-run"}]}`)
		for _, body := range []string{
			`{"model":"claude-sonnet-4-5","max_tokens":100,"container":"container_victim",` + tools + `,"messages":[{"role":"user","content":"cat it"}]}`,
			`{"model":"claude-sonnet-4-5","max_tokens":100,"stream":false,"messages":[{"role":"user","content":[{"type":"document","source":{"type":"file","file_id":"file_victim"}}]}]}`,
		} {
			before := len(leaked())
			if code, b := do("POST", "kb", "/v1/messages", body); code != 200 || len(leaked()) != before+1 {
				t.Errorf("kb names its own object: %d %s", code, b)
			}
		}
		// A Message Batches create naming another's container is refused
		// before it goes upstream; its owner's goes on.
		batch := `{"requests":[{"custom_id":"1","params":{"model":"claude-sonnet-4-5","max_tokens":100,"container":"container_victim",` + tools + `,"messages":[{"role":"user","content":"cat it"}]}}]}`
		before := len(leaked())
		if code, b := do("POST", "ka", "/v1/messages/batches", batch); code != 404 || len(leaked()) != before {
			t.Errorf("ka's batch naming kb's container: %d %s, %d calls upstream", code, b, len(leaked())-before)
		}
		if do("POST", "kb", "/v1/messages/batches", batch); len(leaked()) != before+1 {
			t.Errorf("kb's batch naming its own container did not go upstream")
		}
	})
	t.Run("openai", func(t *testing.T) {
		do, _ := crossFake(t, openAIUp())
		do("POST", "kb", "/openai/v1/files", "x") // file-victim
		do("POST", "kb", "/openai/v1/responses", `{"model":"gpt-4.1","input":"kb-run"}`)
		for _, c := range []struct{ path, body string }{
			{"/openai/v1/chat/completions", `{"model":"gpt-4.1","messages":[{"role":"user","content":[{"type":"file","file":{"file_id":"file-victim"}}]}]}`},
			{"/openai/v1/responses", `{"model":"gpt-4.1","input":[{"type":"item_reference","id":"msg_victim"},{"id":"ci_victim"}]}`},
			{"/openai/v1/responses", `{"model":"gpt-4.1","input":"again","tools":[{"type":"code_interpreter","container":"cntr_victim"}]}`},
		} {
			if code, b := do("POST", "kb", c.path, c.body); code != 200 {
				t.Errorf("kb names its own object in %s: %d %s", c.body, code, b)
			}
		}
		// An item given back by id alone (its type left out) is a
		// reference too.
		if code, _ := do("POST", "ka", "/openai/v1/responses", `{"model":"gpt-4.1","input":[{"id":"msg_victim"}]}`); code != 404 {
			t.Errorf("ka names kb's item by id alone: %d, want 404", code)
		}
	})
	t.Run("gemini", func(t *testing.T) {
		do, _ := crossFake(t, geminiUp())
		do("POST", "kb", "/gemini/upload/v1beta/files", `{"file":{"displayName":"payroll"}}`)
		for _, uri := range []string{"https://generativelanguage.googleapis.com/v1beta/files/victim", "files/victim"} {
			if code, b := do("POST", "kb", "/gemini/v1beta/models/gemini-2.5-flash:generateContent",
				`{"contents":[{"role":"user","parts":[{"fileData":{"fileUri":"`+uri+`"}}]}]}`); code != 200 {
				t.Errorf("kb names its own file %s: %d %s", uri, code, b)
			}
		}
		// A video's page is no file of the Files API: it goes on.
		if code, b := do("POST", "ka", "/gemini/v1beta/models/gemini-2.5-flash:generateContent",
			`{"contents":[{"role":"user","parts":[{"fileData":{"fileUri":"https://www.youtube.com/watch?v=files"}}]}]}`); code != 200 {
			t.Errorf("a video's URI: %d %s", code, b)
		}
	})
}

// TestHeldGeminiBatchFileLineReadsAnothersFile: a Gemini batch whose
// input file is the client's own, but one of whose requests names another
// client's file, is refused before it is created (its input file read
// from the upstream first); one naming the client's own goes on.
func TestHeldGeminiBatchFileLineReadsAnothersFile(t *testing.T) {
	var mu sync.Mutex
	uploads := 0
	creates := 0
	line := `{"key":"1","request":{"contents":[{"role":"user","parts":[{"fileData":{"fileUri":"https://generativelanguage.googleapis.com/v1beta/files/%s"}}]}]}}` + "\n"
	do, _ := crossFake(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case strings.HasPrefix(r.URL.Path, "/upload/"):
			uploads++
			name := []string{"victim", "a1", "a2"}[uploads-1]
			answerJSON(w, `{"file":{"name":"files/`+name+`","uri":"https://generativelanguage.googleapis.com/v1beta/files/`+name+`","state":"ACTIVE"}}`)
		case r.URL.Path == "/download/v1beta/files/a1:download" && r.URL.Query().Get("alt") == "media":
			io.WriteString(w, strings.Replace(line, "%s", "victim", 1))
		case r.URL.Path == "/download/v1beta/files/a2:download" && r.URL.Query().Get("alt") == "media":
			io.WriteString(w, strings.Replace(line, "%s", "a1", 1))
		case strings.HasSuffix(r.URL.Path, ":batchGenerateContent"):
			creates++
			answerJSON(w, `{"name":"batches/b1","metadata":{"name":"batches/b1","state":"BATCH_STATE_PENDING"}}`)
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	})
	do("POST", "kb", "/gemini/upload/v1beta/files", `{}`) // files/victim
	do("POST", "ka", "/gemini/upload/v1beta/files", `{}`) // files/a1: names files/victim
	do("POST", "ka", "/gemini/upload/v1beta/files", `{}`) // files/a2: names files/a1
	create := func(file string) (int, string) {
		return do("POST", "ka", "/gemini/v1beta/models/gemini-2.5-flash:batchGenerateContent",
			`{"batch":{"inputConfig":{"fileName":"`+file+`"}}}`)
	}
	if code, b := create("files/a1"); code != http.StatusNotFound || creates != 0 {
		t.Errorf("ka's batch whose file names kb's file: %d %s, %d created", code, b, creates)
	}
	if code, b := create("files/a2"); code != http.StatusOK || creates != 1 {
		t.Errorf("ka's batch whose file names ka's own file: %d %s, %d created", code, b, creates)
	}
}

// TestHeldAnswerEchoNotOwned: what a model writes into a tool call's input
// is not recorded as the client's, though it names objects as an answer
// does: a client cannot have a model echo another client's ids to make
// them its own.
func TestHeldAnswerEchoNotOwned(t *testing.T) {
	do, leaked := crossFake(t, anthropicUp())
	if code, b := do("POST", "ka", "/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":100,"messages":[{"role":"user","content":"echo-run"}]}`); code != 200 {
		t.Fatalf("ka's echo: %d %s", code, b)
	}
	before := len(leaked())
	code, b := do("POST", "ka", "/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":100,"messages":[{"role":"user","content":[{"type":"document","source":{"type":"file","file_id":"file_victim"}}]}]}`)
	wantRefused(t, "a file id a model echoed", code, b, leaked()[before:])
}

// TestHeldDiagnosticsOfAnothersMessage: Anthropic's diagnostics compare a
// call with an earlier one (previous_message_id), which tells how their
// prompts differ: only a message of the client's own may be named.
func TestHeldDiagnosticsOfAnothersMessage(t *testing.T) {
	do, leaked := crossFake(t, anthropicUp())
	do("POST", "kb", "/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":100,"messages":[{"role":"user","content":"hi"}]}`) // msg_1, kb's
	body := `{"model":"claude-sonnet-4-5","max_tokens":100,"diagnostics":{"previous_message_id":"msg_1"},"messages":[{"role":"user","content":"victim?"}]}`
	before := len(leaked())
	code, b := do("POST", "ka", "/v1/messages", body)
	wantRefused(t, "diagnostics of kb's message", code, b, leaked()[before:])
	if code, b := do("POST", "kb", "/v1/messages", body); code != 200 {
		t.Errorf("kb's diagnostics of its own message: %d %s", code, b)
	}
}

// TestHeldGeminiModelOperationsNotShared: the models are shared under the
// proxy's key, not the operations kept under a model (long-running calls
// another client made).
func TestHeldGeminiModelOperationsNotShared(t *testing.T) {
	do, _ := crossFake(t, func(w http.ResponseWriter, r *http.Request) { answerJSON(w, `{}`) })
	if code, b := do("GET", "ka", "/gemini/v1beta/models/veo-3.0-generate-001/operations", ""); code != http.StatusForbidden {
		t.Errorf("a model's operations: %d %s, want 403", code, b)
	}
	if code, b := do("GET", "ka", "/gemini/v1beta/models/veo-3.0-generate-001", ""); code != http.StatusOK {
		t.Errorf("a model: %d %s, want it passed on", code, b)
	}
}

// TestHeldCodeFilesOfAnother: the files a client's code wrote may be read
// by it alone, and nothing else of the Files or Containers APIs passes.
func TestHeldCodeFilesOfAnother(t *testing.T) {
	up := anthropicUp()
	do, _ := crossFake(t, func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "/files") || strings.HasPrefix(r.URL.Path, "/v1/containers") {
			io.WriteString(w, victimSecret)
			return
		}
		up(w, r)
	})
	tools := `"tools":[{"type":"code_execution_20250825","name":"code_execution"}]`
	do("POST", "kb", "/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":100,`+tools+`,"messages":[{"role":"user","content":"kb-run"}]}`) // file_victim, kb's
	for _, c := range []struct {
		method, key, path string
		want              int
	}{
		{"GET", "ka", "/v1/files/file_victim/content", http.StatusNotFound},
		{"GET", "ka", "/v1/files/file_victim", http.StatusNotFound},
		{"DELETE", "kb", "/v1/files/file_victim", http.StatusForbidden},
		{"GET", "kb", "/v1/files", http.StatusForbidden},
		{"GET", "ka", "/openai/v1/containers/cntr_x/files/cfile_x/content", http.StatusNotFound},
		{"GET", "ka", "/openai/v1/containers", http.StatusForbidden},
		{"POST", "ka", "/openai/v1/containers", http.StatusForbidden},
	} {
		if code, b := do(c.method, c.key, c.path, ""); code != c.want || strings.Contains(b, victimSecret) {
			t.Errorf("%s %s by %s: %d %s, want %d", c.method, c.path, c.key, code, b, c.want)
		}
	}
}
