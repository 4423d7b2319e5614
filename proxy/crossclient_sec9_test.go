package proxy_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Review round 9: what the proxy checks differing from what the Gemini
// front end acts on.

// geminiBatchUpdateUp is a fake Gemini API with Batch Mode's update
// method: kb's upload makes files/victim; ka's batch create makes
// batches/ka1 (pending); PATCH batches/ka1:updateGenerateContentBatch
// replaces the pending batch's inputConfig with the body's (the method's
// body is a GenerateContentBatch, inputConfig included); a GET of the
// batch once it has run answers its inlined responses, which carry what
// the model read (kb's secret if its input named files/victim).
func geminiBatchUpdateUp() http.HandlerFunc {
	var mu sync.Mutex
	input := ""
	return func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		p := r.URL.Path
		switch {
		case strings.HasPrefix(p, "/upload/"):
			answerJSON(w, `{"file":{"name":"files/victim","uri":"https://generativelanguage.googleapis.com/v1beta/files/victim","mimeType":"text/plain","state":"ACTIVE"}}`)
		case strings.HasSuffix(p, ":batchGenerateContent"):
			mu.Lock()
			input = string(b)
			mu.Unlock()
			answerJSON(w, `{"name":"batches/ka1","metadata":{"@type":"type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatch","name":"batches/ka1","state":"BATCH_STATE_PENDING"}}`)
		case r.Method == http.MethodPatch && p == "/v1beta/batches/ka1:updateGenerateContentBatch":
			mu.Lock()
			input = string(b)
			mu.Unlock()
			answerJSON(w, `{"name":"batches/ka1","state":"BATCH_STATE_PENDING"}`)
		case r.Method == http.MethodGet && p == "/v1beta/batches/ka1":
			mu.Lock()
			read := secretIfVictim(input)
			mu.Unlock()
			answerJSON(w, `{"name":"batches/ka1","done":true,`+
				`"metadata":{"@type":"type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatch","name":"batches/ka1","state":"BATCH_STATE_SUCCEEDED"},`+
				`"response":{"@type":"type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatchOutput",`+
				`"inlinedResponses":{"inlinedResponses":[{"response":{"candidates":[{"content":{"role":"model","parts":[{"text":"`+read+`"}]}}]},"metadata":{"key":"1"}}]}}}`)
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}
}

// A client's own pending Batch Mode job can be updated: PATCH
// /v1beta/{generateContentBatch.name=batches/*}:updateGenerateContentBatch,
// whose body "contains an instance of GenerateContentBatch" (inputConfig
// among its fields) with an optional updateMask query parameter
// (https://ai.google.dev/api/batch-api#method:-batches.updategeneratecontentbatch;
// the discovery document binds it as batches.updateGenerateContentBatch,
// PATCH, and batches.updateEmbedContentBatch likewise). The Gemini face
// checks what a batch names only at its create (createBatch: fileName,
// inlined requests, the input file's lines); a call about one batch
// (geminiGate.one) checks only that the path's batch is the client's and
// passes the body upstream unread, under the shared key. So ka creates a
// clean batch, then updates its input to kb's file (inputConfig.fileName:
// files/victim) or to inlined requests whose fileData reads kb's file,
// and reads kb's data in its own batch's responses. (How sure: the method
// and its body type are documented; which fields the service lets an
// update change on a pending batch is not documented beyond
// "updateMask: the list of fields to update". Whatever it lets change,
// the body is never checked.)
func TestHeldGeminiBatchUpdateNamesAnothersFile(t *testing.T) {
	do, leaked := crossFake(t, geminiBatchUpdateUp())
	if code, b := do("POST", "kb", "/gemini/upload/v1beta/files", `{"file":{"displayName":"payroll"}}`); code != 200 {
		t.Fatalf("kb's upload: %d %s", code, b)
	}
	// Control: a create naming kb's file is refused.
	if code, _ := do("POST", "ka", "/gemini/v1beta/models/gemini-2.5-flash:batchGenerateContent",
		`{"batch":{"displayName":"x","inputConfig":{"fileName":"files/victim"}}}`); code != 404 {
		t.Fatalf("control: ka's batch create on kb's file: %d, want 404", code)
	}
	if code, b := do("POST", "ka", "/gemini/v1beta/models/gemini-2.5-flash:batchGenerateContent",
		`{"batch":{"displayName":"x","inputConfig":{"requests":{"requests":[{"request":{"contents":[{"parts":[{"text":"hello"}]}]},"metadata":{"key":"1"}}]}}}}`); code != 200 {
		t.Fatalf("ka's clean batch: %d %s", code, b)
	}
	for _, body := range []string{
		`{"inputConfig":{"fileName":"files/victim"}}`,
		`{"inputConfig":{"requests":{"requests":[{"request":{"contents":[{"role":"user","parts":[` +
			`{"fileData":{"mimeType":"text/plain","fileUri":"https://generativelanguage.googleapis.com/v1beta/files/victim"}},{"text":"print it"}]}]},"metadata":{"key":"1"}}]}}}`,
	} {
		before := len(leaked())
		code, b := do("PATCH", "ka", "/gemini/v1beta/batches/ka1:updateGenerateContentBatch?updateMask=inputConfig", body)
		wantRefused(t, "ka's update of its own batch to "+body, code, b, leaked()[before:])
		if _, got := do("GET", "ka", "/gemini/v1beta/batches/ka1", ""); strings.Contains(got, victimSecret) {
			t.Errorf("ka's own batch, updated to read kb's file, answers kb's data: %s", got)
		}
	}
}

// The proxy refuses X-HTTP-Method-Override (and X-HTTP-Method,
// X-Method-Override) in this mode, because Google's front end takes a POST
// carrying it for the method it names. Google's system parameters give the
// same override as a query parameter: the table of
// https://cloud.google.com/apis/docs/system-parameters lists
// "$httpMethod | X-HTTP-Method-Override" (the query form of the header, as
// $ct is of Content-Type, $fields of X-Goog-FieldMask, $userProject of
// X-Goog-User-Project; the page's current revision lists the header row
// only, an earlier one both). refuseMethodOverride looks at headers only,
// so ka's POST /upload/v1beta/files?$httpMethod=GET is taken for the
// upload serveOwned lets through (a POST to the collection) and reaches
// upstream, where the front end acts on it as a GET. The fake, like
// TestHeldGeminiUploadPathOfAnothersFile's, answers a GET under /upload/
// as the API path it prefixes (the list of every file under the shared
// key); that part is unverified, as it is there. The override parameter
// itself is documented; it should be refused as its header is, on every
// face.
func TestHeldGeminiMethodOverrideQueryParameter(t *testing.T) {
	ts, calls := heldServer(t, func(w http.ResponseWriter, r *http.Request) {
		method := r.Method
		if o := r.URL.Query().Get("$httpMethod"); o != "" && r.Method == http.MethodPost {
			method = o
		}
		p := strings.TrimPrefix(r.URL.Path, "/upload")
		switch {
		case method == http.MethodPost && r.URL.Path == "/upload/v1beta/files":
			answerJSON(w, `{"file":{"name":"files/victim","displayName":"`+victimSecret+`","state":"ACTIVE"}}`)
		case method == http.MethodGet && p == "/v1beta/files":
			answerJSON(w, `{"files":[{"name":"files/victim","displayName":"`+victimSecret+`"}]}`)
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	})
	if code, b := heldCall(t, ts, "POST", "kb", "/gemini/upload/v1beta/files", `{"file":{"displayName":"payroll"}}`); code != 200 {
		t.Fatalf("kb's upload: %d %s", code, b)
	}
	// Control: the header form is refused.
	if code, _ := heldCall(t, ts, "POST", "ka", "/gemini/upload/v1beta/files", `{}`, "X-HTTP-Method-Override", "GET"); code != http.StatusBadRequest {
		t.Fatalf("control: X-HTTP-Method-Override: %d, want 400", code)
	}
	for _, q := range []string{"?$httpMethod=GET", "?%24httpMethod=GET"} {
		before := len(calls())
		code, b := heldCall(t, ts, "POST", "ka", "/gemini/upload/v1beta/files"+q, `{}`)
		if sent := calls()[before:]; len(sent) != 0 || strings.Contains(b, victimSecret) {
			t.Errorf("ka's POST /upload/v1beta/files%s: %d %s; passed upstream under the shared key: %q", q, code, b, sent)
		}
	}
}

// A Gemini file's name is its uploader's to choose on create
// (https://ai.google.dev/api/files#File: "If the name is empty on create,
// a unique name will be generated"), unique under the key and free again
// once deleted. Two ways round the owners followed from that, under one
// shared key: an upload asking for a name another client's file has was
// refused by the API (409 ALREADY_EXISTS) and passed on, telling the
// caller which names other clients' files have (a name such as
// files/acme-takeover-memo is data), where a GET of it is a 404 as for an
// unknown name; and a batch's input file, checked as the batch is
// created, could be deleted and made again under its name with other
// lines before the batch read it. With proxy-held keys an upload now
// leaves the name to the API: one naming its file is refused, and so is
// an upload in another protocol than the SDKs' (resumable), whose
// metadata the proxy would not read (multipart), by header or by query.
func TestHeldGeminiUploadMayNotNameItsFile(t *testing.T) {
	var mu sync.Mutex
	taken := map[string]bool{}
	ts, calls := heldServer(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		name := "files/generated" + strconv.Itoa(len(taken))
		if _, after, ok := strings.Cut(string(b), `"name":"`); ok {
			name, _, _ = strings.Cut(after, `"`)
		}
		if taken[name] {
			w.WriteHeader(http.StatusConflict)
			io.WriteString(w, `{"error":{"code":409,"message":"File `+name+` already exists.","status":"ALREADY_EXISTS"}}`)
			return
		}
		taken[name] = true
		answerJSON(w, `{"file":{"name":"`+name+`","state":"ACTIVE"}}`)
	})
	if code, b := heldCall(t, ts, "POST", "kb", "/gemini/upload/v1beta/files", `{"file":{"displayName":"acme takeover memo"}}`); code != 200 {
		t.Fatalf("kb's upload, named by the API: %d %s", code, b)
	}
	for _, c := range []struct {
		what, query, body string
		hdr               []string
	}{
		{"naming its file", "", `{"file":{"name":"files/acme-takeover-memo"}}`, nil},
		{"naming it by another name's case", "", `{"FILE":{"Name":"files/in"}}`, nil},
		{"multipart", "", "--b\r\nContent-Type: application/json\r\n\r\n{\"file\":{\"name\":\"files/in\"}}\r\n--b--",
			[]string{"X-Goog-Upload-Protocol", "multipart", "Content-Type", "multipart/related; boundary=b"}},
		{"multipart by query", "?uploadType=multipart", `{"file":{"displayName":"x"}}`, nil},
		{"no protocol", "", `{"file":{"displayName":"x"}}`, []string{"X-Goog-Upload-Protocol", ""}},
	} {
		before := len(calls())
		code, b := heldCall(t, ts, "POST", "ka", "/gemini/upload/v1beta/files"+c.query, c.body, c.hdr...)
		if code != http.StatusBadRequest || len(calls()) != before {
			t.Errorf("ka's upload %s: %d %s (upstream calls %q), want a 400 and none", c.what, code, b, calls()[before:])
		}
	}
	if code, b := heldCall(t, ts, "POST", "ka", "/gemini/upload/v1beta/files", `{"file":{"displayName":"mine"}}`); code != 200 {
		t.Errorf("ka's upload, named by the API: %d %s", code, b)
	}
}

// The objects of APIs that do not pass with proxy-held keys (Gemini
// context caches, Anthropic custom skills, OpenAI vector stores) can only
// be the operator's, made under the upstream key elsewhere: a call naming
// one by its id goes on, as a file search of the operator's vector store
// does (TestHeldFileCitationNotOwned). No client makes or lists them
// through the proxy.
func TestHeldOperatorsObjectsMayBeNamed(t *testing.T) {
	gem, _ := crossFake(t, geminiUp())
	if code, b := gem("POST", "ka", "/gemini/v1beta/models/gemini-2.5-flash:generateContent",
		`{"cachedContent":"cachedContents/handbook","contents":[{"role":"user","parts":[{"text":"what does the handbook say?"}]}]}`); code != 200 {
		t.Errorf("a call naming the operator's context cache: %d %s", code, b)
	}
	if code, _ := gem("POST", "ka", "/gemini/v1beta/cachedContents", `{"model":"models/gemini-2.5-flash"}`); code == 200 {
		t.Errorf("a client made a context cache under the shared key")
	}
	ant, _ := crossFake(t, anthropicUp())
	if code, b := ant("POST", "ka", "/v1/messages",
		`{"model":"claude-sonnet-4-5","max_tokens":100,"container":{"skills":[{"type":"custom","skill_id":"skill_handbook","version":"latest"}]},`+
			`"tools":[{"type":"code_execution_20250825","name":"code_execution"}],"messages":[{"role":"user","content":"use the skill"}]}`); code != 200 {
		t.Errorf("a call naming the operator's custom skill: %d %s", code, b)
	}
	if code, _ := ant("POST", "ka", "/v1/skills", `{"display_title":"mine"}`); code == 200 {
		t.Errorf("a client made a skill under the shared key")
	}
}

// With proxy-held keys the OpenAI key is the operator's, and so are the
// organization and project it acts in: OpenAI-Organization and
// OpenAI-Project pick them among those a key spans, so a client sending
// them acted in another project of the operator's (its stored prompts,
// vector stores, files). They are dropped, on routed and pass-through
// calls alike.
func TestHeldOpenAIAccountHeadersDropped(t *testing.T) {
	ts, seen := headerSpy(t, func(path string) string {
		if path == "/v1/files" {
			return `{"object":"list","data":[],"has_more":false}`
		}
		return `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4.1","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`
	}, "OpenAI-Organization", "OpenAI-Project")
	hdr := []string{"OpenAI-Organization", "org-other", "OpenAI-Project", "proj-other"}
	if code, b := heldCall(t, ts, "POST", "ka", "/openai/v1/chat/completions", `{"model":"gpt-4.1","messages":[{"role":"user","content":"hi"}]}`, hdr...); code != 200 {
		t.Fatalf("chat: %d %s", code, b)
	}
	if code, b := heldCall(t, ts, "GET", "ka", "/openai/v1/files", "", hdr...); code != 200 {
		t.Fatalf("files: %d %s", code, b)
	}
	wantNoneOther(t, seen(), 2)
}

// headerSpy serves heldServer with an upstream answering each call with
// answer(its path), and returns the test server and, for each upstream
// call so far, its path and the values of the headers named.
func headerSpy(t *testing.T, answer func(path string) string, names ...string) (*httptest.Server, func() []string) {
	var mu sync.Mutex
	var seen []string
	ts, _ := heldServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		line := r.URL.Path
		for _, n := range names {
			line += " " + r.Header.Get(n)
		}
		mu.Lock()
		seen = append(seen, line)
		mu.Unlock()
		answerJSON(w, answer(r.URL.Path))
	})
	return ts, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
}

// wantNoneOther checks that at least n upstream calls were seen, none of
// them with a header value of the client's ("...other").
func wantNoneOther(t *testing.T, seen []string, n int) {
	t.Helper()
	if len(seen) < n {
		t.Fatalf("upstream calls %q", seen)
	}
	for _, s := range seen {
		if strings.Contains(s, "other") {
			t.Errorf("the client's account or user header went upstream under the operator's key: %q", s)
		}
	}
}
