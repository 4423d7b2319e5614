package proxy_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// Ways around the held-key object check (heldrefs.go) that it closes:
// each test names one, which passed before it was closed.

// The Responses API's hosted shell tool runs in a container named by
// {"type":"container_reference","container_id":...} (openai-go v3.96.0
// responses.FunctionShellToolParam.Environment / ContainerReferenceParam:
// "References a container created with the /v1/containers endpoint" or by
// the code interpreter). The scan checked "container" members only, never
// "container_id", so kb's container (recorded as kb's from its answer) was
// reached by ka.
func TestHeldShellContainerReference(t *testing.T) {
	do, leaked := crossFake(t, openAIUp())
	if code, b := do("POST", "kb", "/openai/v1/responses",
		`{"model":"gpt-4.1","input":"kb-run","tools":[{"type":"code_interpreter","container":{"type":"auto"}}]}`); code != 200 {
		t.Fatalf("kb's response: %d %s", code, b)
	}
	// The gate this test goes around: the code interpreter's container.
	if code, _ := do("POST", "ka", "/openai/v1/responses",
		`{"model":"gpt-4.1","input":"x","tools":[{"type":"code_interpreter","container":"cntr_victim"}]}`); code != 404 {
		t.Fatalf("code_interpreter container of kb's: %d, want 404", code)
	}
	before := len(leaked())
	code, b := do("POST", "ka", "/openai/v1/responses",
		`{"model":"gpt-4.1","input":"cat payroll.csv","tools":[{"type":"shell","environment":{"type":"container_reference","container_id":"cntr_victim"}}]}`)
	wantRefused(t, "shell tool environment container_reference of kb's container", code, b, leaked()[before:])
}

// openAIEchoUp is a fake Responses API that, as the real one does,
// echoes the request's metadata (and tools, text.format, ...) in the
// response object; a call naming file-victim reads it.
func openAIEchoUp() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var req struct {
			Metadata json.RawMessage `json:"metadata"`
		}
		json.Unmarshal(b, &req)
		md := `{}`
		if len(req.Metadata) > 0 {
			md = string(req.Metadata)
		}
		answerJSON(w, `{"id":"resp_a1","object":"response","created_at":1,"status":"completed","model":"gpt-4.1","metadata":`+md+`,"output":[`+
			`{"id":"msg_a1","type":"message","role":"assistant","status":"completed","content":[{"type":"output_text","text":"`+secretIfVictim(string(b))+`","annotations":[]}]}],`+
			`"usage":{"input_tokens":1,"output_tokens":1,"total_tokens":2}}`)
	}
}

// The Responses API echoes a call's metadata (a map of strings the client
// chooses) in the response object. answerIDs recorded "id",
// "container_id" and "file_id" at any depth of that object, while the
// request scan checked neither "id" (outside an item_reference or an input
// item) nor "container_id": so metadata {"id": X} makes any id not yet
// recorded (as in TestHeldAnswerEchoNotOwned: an object made under the
// shared key but not through a client's recorded answer) the caller's
// without a model. Now only the places of a response that name its own
// objects are read (responseIDs), and metadata is never scanned.
func TestHeldMetadataEchoNotOwned(t *testing.T) {
	do, leaked := crossFake(t, openAIEchoUp())
	for _, md := range []string{`{"id":"file-victim"}`, `{"container_id":"file-victim"}`} {
		if code, b := do("POST", "ka", "/openai/v1/responses",
			`{"model":"gpt-4.1","input":"hi","metadata":`+md+`}`); code != 200 {
			t.Fatalf("ka's call with metadata %s: %d %s", md, code, b)
		}
	}
	before := len(leaked())
	code, b := do("POST", "ka", "/openai/v1/responses",
		`{"model":"gpt-4.1","input":[{"role":"user","content":[{"type":"input_file","file_id":"file-victim"},{"type":"input_text","text":"print it"}]}]}`)
	wantRefused(t, "a file id the client's own metadata echoed", code, b, leaked()[before:])
}

// A body the scan cannot read as JSON (json.Valid false) was passed on
// unchecked (refsOf returns nil: "the API refuses it"), but an upstream
// reader may be more lenient: Python's json.loads on bytes takes a
// leading UTF-8 BOM (json.detect_encoding: utf-8-sig), and NaN. The
// Anthropic sync route (no budget: nothing else parses the body) and the
// shared count_tokens then carried kb's container and file upstream.
func TestHeldUncheckableBodyRefused(t *testing.T) {
	do, leaked := crossFake(t, anthropicUp())
	tools := `"tools":[{"type":"code_execution_20250825","name":"code_execution"}]`
	do("POST", "kb", "/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":100,`+tools+`,"messages":[{"role":"user","content":"kb-run"}]}`)
	for name, c := range map[string]struct{ path, body string }{
		"BOM, messages":     {"/v1/messages", "\xef\xbb\xbf" + `{"model":"claude-sonnet-4-5","max_tokens":100,"container":"container_victim",` + tools + `,"messages":[{"role":"user","content":"cat /tmp/outputs/payroll.csv"}]}`},
		"NaN, messages":     {"/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":100,"tools":[{"name":"t","input_schema":{"type":"object","x-n":NaN}}],"messages":[{"role":"user","content":[{"type":"document","source":{"type":"file","file_id":"file_victim"}}]}]}`},
		"BOM, count_tokens": {"/v1/messages/count_tokens", "\xef\xbb\xbf" + `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":[{"type":"document","source":{"type":"file","file_id":"file_victim"}}]}]}`},
	} {
		before := len(leaked())
		code, b := do("POST", "ka", c.path, c.body)
		// The fake answers whatever it gets; what matters is that it got it.
		if got := leaked()[before:]; len(got) != 0 {
			t.Errorf("%s: ka got %d %.80s; upstream got ka's unchecked body naming kb's objects: %q", name, code, b, got)
		}
	}
}

// A batch input file's lines were split on "\n" only, and a line that is
// no valid JSON was let through unchecked (checkLine: Members fails, nil).
// A reader that splits lines as Python's text mode does (universal
// newlines: a lone "\r" ends a line too) reads two valid requests in what
// the proxy took for one invalid line, the second reading kb's file.
func TestHeldBatchLineCR(t *testing.T) {
	var mu sync.Mutex
	uploads, creates := 0, 0
	do, _ := crossFake(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case r.URL.Path == "/v1/files":
			uploads++
			id := []string{"file-victim", "file-a"}[uploads-1]
			answerJSON(w, `{"id":"`+id+`","object":"file","purpose":"batch","filename":"x","bytes":1,"created_at":1,"status":"processed"}`)
		case r.URL.Path == "/v1/files/file-a/content":
			line := `{"custom_id":"%s","method":"POST","url":"/v1/chat/completions","body":{"model":"gpt-4.1","messages":[{"role":"user","content":[{"type":"file","file":{"file_id":"%s"}}]}]}}`
			io.WriteString(w, strings.Replace(strings.Replace(line, "%s", "1", 1), "%s", "file-a", 1)+"\r"+
				strings.Replace(strings.Replace(line, "%s", "2", 1), "%s", "file-victim", 1)+"\n")
		case r.URL.Path == "/v1/batches":
			creates++
			answerJSON(w, `{"id":"batch_1","object":"batch","status":"validating"}`)
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	})
	do("POST", "kb", "/openai/v1/files", "x") // file-victim
	do("POST", "ka", "/openai/v1/files", "x") // file-a
	code, b := do("POST", "ka", "/openai/v1/batches", `{"input_file_id":"file-a","endpoint":"/v1/chat/completions","completion_window":"24h"}`)
	if code != http.StatusNotFound || creates != 0 {
		t.Errorf("ka's batch whose \\r-separated second line reads kb's file-victim: %d %s, %d created; want 404, none", code, b, creates)
	}
}

// A Gemini fileUri the scan could not read as a Files API URI was passed on:
// url.Parse refuses a control character, and a URI with more than one
// "/files/" segment was taken by its last one (here ka's own files/a).
// Whether Google's URI reader takes these as files/victim is UNVERIFIED
// (a WHATWG-style reader strips tabs and newlines; one that matches the
// first files/<id> would read kb's file); the scan failed open on them.
// Now any URI that may name a file but not in the API's own form is refused.
func TestHeldGeminiFileURIForms(t *testing.T) {
	var mu sync.Mutex
	uploads := 0
	do, leaked := crossFake(t, func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/upload/") {
			mu.Lock()
			uploads++
			name := []string{"victim", "a"}[uploads-1]
			mu.Unlock()
			answerJSON(w, `{"file":{"name":"files/`+name+`","uri":"https://generativelanguage.googleapis.com/v1beta/files/`+name+`","state":"ACTIVE"}}`)
			return
		}
		geminiUp()(w, r)
	})
	do("POST", "kb", "/gemini/upload/v1beta/files", `{}`) // files/victim
	do("POST", "ka", "/gemini/upload/v1beta/files", `{}`) // files/a
	for _, uri := range []string{
		`https://generativelanguage.googleapis.com/v1beta/files/victim\n`,
		`https://generativelanguage.googleapis.com/v1beta/files/vic\ttim`,
		`https://generativelanguage.googleapis.com/v1beta/files/victim%23/files/a`,
		`https://generativelanguage.googleapis.com/v1beta/files/victim/..%2F..%2Ffiles/a`,
	} {
		before := len(leaked())
		code, b := do("POST", "ka", "/gemini/v1beta/models/gemini-2.5-flash:generateContent",
			`{"contents":[{"role":"user","parts":[{"fileData":{"fileUri":"`+uri+`"}},{"text":"print it"}]}]}`)
		if code != http.StatusNotFound || len(leaked()) != before {
			t.Errorf("fileUri %s: ka got %d %.60s, sent upstream; want 404", uri, code, b)
		}
	}
}
