package proxy_test

import (
	"encoding/json"
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

// The tests of this file check that a client holding one of the proxy's
// client keys cannot reach another client's files: through a body the
// proxy reads differently from the API (another spelling of a member, or
// a member given twice), or through a name made again. The upstream is a
// fake that answers as the API does.

// heldKeysFake serves the proxy with proxy-held keys (clients "a", key
// "ka", and "b", key "kb") in front of up, and returns a function making
// one call of a client through it.
func heldKeysFake(t *testing.T, up http.HandlerFunc) func(method, key, path, body string) (int, string) {
	fake := httptest.NewServer(up)
	t.Cleanup(fake.Close)
	u, _ := url.Parse(fake.URL)
	keys := &proxy.ClientKeys{Upstream: llmfleet.Credential{APIKey: "ant"}, OpenAI: llmfleet.Credential{AuthToken: "oai"},
		Gemini: llmfleet.Credential{APIKey: "gk"}, Hashes: map[string]string{proxy.HashKey("ka"): "a", proxy.HashKey("kb"): "b"}}
	ts := httptest.NewServer((&proxy.Server{OpenAIUpstream: u, GeminiUpstream: u, Credentials: keys.Map,
		OpenAICredentials: keys.MapOpenAI, GeminiCredentials: keys.MapGemini}).Handler())
	t.Cleanup(ts.Close)
	return func(method, key, path, body string) (int, string) {
		req, _ := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
		req.Header.Set("x-goog-api-key", key)
		req.Header.Set("Authorization", "Bearer "+key)
		if method == http.MethodPost && strings.HasSuffix(path, "/upload/v1beta/files") {
			// An upload begins as the SDKs begin one.
			req.Header.Set("X-Goog-Upload-Protocol", "resumable")
			req.Header.Set("X-Goog-Upload-Command", "start")
		}
		res, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
}

// filesFake serves heldKeysFake with a fake upstream that answers an
// upload (a path with the prefix upload) with file and any other call, a
// create, with created, and keeps the bodies of those creates.
func filesFake(t *testing.T, upload, file, created string) (do func(method, key, path, body string) (int, string), creates func() []string) {
	var mu sync.Mutex
	var bodies []string
	do = heldKeysFake(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		if strings.HasPrefix(r.URL.Path, upload) {
			io.WriteString(w, file)
			return
		}
		bodies = append(bodies, string(b))
		io.WriteString(w, created)
	})
	return do, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), bodies...)
	}
}

// A Gemini batch naming another client's file in the proto's snake_case
// spelling, which Google's API reads as well, is refused like the
// camelCase one.
func TestGeminiBatchOfAnothersFileSnakeCase(t *testing.T) {
	do, creates := filesFake(t, "/upload/", `{"file":{"name":"files/victim"}}`, `{"name":"batches/b1"}`)
	do("POST", "kb", "/gemini/upload/v1beta/files", `{}`) // files/victim is kb's
	const path = "/gemini/v1beta/models/gemini-2.5-flash:batchGenerateContent"
	if code, _ := do("POST", "ka", path, `{"batch":{"inputConfig":{"fileName":"files/victim"}}}`); code != 404 {
		t.Errorf("camelCase: %d, want 404", code)
	}
	if code, b := do("POST", "ka", path, `{"batch":{"input_config":{"file_name":"files/victim"}}}`); code != 404 || len(creates()) != 0 {
		t.Errorf("ka batching kb's file: %d %s; upstream got %q", code, b, creates())
	}
}

// An OpenAI batch create naming input_file_id twice, another client's
// file in one of them, is refused: a reader taking the last one would
// batch that file.
func TestOpenAIBatchOfAnothersFileDuplicateKey(t *testing.T) {
	do, creates := filesFake(t, "/v1/files", `{"id":"file-victim","object":"file"}`, `{"id":"batch_1","object":"batch"}`)
	do("POST", "kb", "/openai/v1/files", "x")
	body := `{"input_file_id":0,"input_file_id":"file-victim","endpoint":"/v1/chat/completions","completion_window":"24h"}`
	if code, b := do("POST", "ka", "/openai/v1/batches", body); code != 404 {
		t.Errorf("%s: %d %s, want 404", body, code, b)
	}
	if len(creates()) != 0 {
		t.Errorf("upstream got %q", creates())
	}
	// A body that is no JSON object is refused, in OpenAI's envelope.
	if code, b := do("POST", "ka", "/openai/v1/batches", `["input_file_id"]`); code != 400 || !strings.Contains(b, "invalid_request_error") {
		t.Errorf("a JSON array: %d %s, want a 400", code, b)
	}
}

// A file name made again upstream after its first owner deleted it (with
// proxy-held keys no client chooses a name, but an upload made under the
// key elsewhere may, and the API may give a name again), uploaded by
// another client, is the new uploader's alone: the first owner no longer
// reads it, its new owner does. (The fake gives the one name while it is
// free, and refuses a name taken, as the API does.)
func TestGeminiFileNameMadeAgainIsItsNewOwners(t *testing.T) {
	var mu sync.Mutex
	files := map[string]string{}
	do := heldKeysFake(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		name := strings.TrimPrefix(r.URL.Path, "/v1beta/")
		switch r.Method {
		case "POST":
			var req struct {
				File struct{ DisplayName string }
			}
			json.NewDecoder(r.Body).Decode(&req)
			if _, taken := files["files/report"]; taken {
				w.WriteHeader(409)
				return
			}
			files["files/report"] = req.File.DisplayName
			io.WriteString(w, `{"file":{"name":"files/report"}}`)
		case "DELETE":
			delete(files, name)
			io.WriteString(w, `{}`)
		default:
			if c, ok := files[name]; ok {
				io.WriteString(w, `{"name":"`+name+`","displayName":"`+c+`"}`)
			} else {
				w.WriteHeader(404)
			}
		}
	})
	do("POST", "kb", "/gemini/upload/v1beta/files", `{"file":{"displayName":"kb's"}}`)
	do("DELETE", "kb", "/gemini/v1beta/files/report", "")
	if code, b := do("POST", "ka", "/gemini/upload/v1beta/files", `{"file":{"displayName":"ka's secret"}}`); code != 200 {
		t.Fatalf("ka's upload: %d %s", code, b)
	}
	if code, b := do("GET", "kb", "/gemini/v1beta/files/report", ""); code != 404 {
		t.Errorf("kb reads ka's file: %d %s", code, b)
	}
	if code, b := do("GET", "ka", "/gemini/v1beta/files/report", ""); code != 200 {
		t.Errorf("ka reads its own file: %d %s", code, b)
	}
}

// A batch of /v1/responses calls whose input file's content breaks off
// upstream is refused 502, not created on what was read of it: the rest
// might continue from another client's response.
func TestOpenAIResponsesBatchFileBrokenOff(t *testing.T) {
	var mu sync.Mutex
	var creates int
	do := heldKeysFake(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		switch {
		case r.URL.Path == "/v1/files":
			io.WriteString(w, `{"id":"file-a","object":"file"}`)
		case strings.HasSuffix(r.URL.Path, "/content"):
			w.Header().Set("Content-Length", "100000")
			io.WriteString(w, `{"custom_id":"a","method":"POST","url":"/v1/responses","body":{"model":"gpt-4.1","input":"hi"}}`+"\n")
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler) // the connection drops mid-file
		default:
			mu.Lock()
			creates++
			mu.Unlock()
			io.WriteString(w, `{"id":"batch_1","object":"batch"}`)
		}
	})
	do("POST", "ka", "/openai/v1/files", "x")
	code, b := do("POST", "ka", "/openai/v1/batches", `{"input_file_id":"file-a","endpoint":"/v1/responses","completion_window":"24h"}`)
	mu.Lock()
	defer mu.Unlock()
	if code != http.StatusBadGateway || creates != 0 {
		t.Errorf("%d %s, %d batches created; want a 502 and none", code, b, creates)
	}
}
