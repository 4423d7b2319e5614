package proxy_test

import (
	"net/http"
	"strings"
	"testing"
)

// googleFrontEnd is a fake Gemini API that, as Google's front end does
// for its APIs, takes a form POST carrying X-HTTP-Method-Override as the
// method it names: google-api-client (Java) MethodOverride "wraps HTTP
// requests inside of a POST request and uses [X-HTTP-Method-Override] to
// specify the actual HTTP method ... also allows GET requests with a long
// URL to be instead sent using method override as a POST request" (the
// query moved into an application/x-www-form-urlencoded body); the open
// source transcoder modelled on it, grpc-gateway v2.30.0 runtime/mux.go,
// does the same (isPathLengthFallback, r.Method = override). Its lists hold
// every batch and file made under the shared key: kb's batch, whose
// inlined responses carry kb's answers, and kb's upload.
func googleFrontEnd() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		method := r.Method
		if o := r.Header.Get("X-HTTP-Method-Override"); o != "" && r.Method == http.MethodPost &&
			r.Header.Get("Content-Type") == "application/x-www-form-urlencoded" {
			method = o
		}
		switch {
		case strings.HasSuffix(r.URL.Path, ":batchGenerateContent"):
			answerJSON(w, `{"name":"batches/kb1","metadata":{"@type":"type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatch","name":"batches/kb1","state":"BATCH_STATE_PENDING"}}`)
		case method == http.MethodGet && r.URL.Path == "/v1beta/batches":
			answerJSON(w, `{"operations":[{"name":"batches/kb1","done":true,`+
				`"metadata":{"@type":"type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatch","name":"batches/kb1","state":"BATCH_STATE_SUCCEEDED"},`+
				`"response":{"@type":"type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatchOutput",`+
				`"inlinedResponses":{"inlinedResponses":[{"response":{"candidates":[{"content":{"role":"model","parts":[{"text":"`+victimSecret+`"}]}}]},"metadata":{"key":"1"}}]}}}]}`)
		case method == http.MethodGet && r.URL.Path == "/v1beta/files":
			answerJSON(w, `{"files":[{"name":"files/victim","displayName":"`+victimSecret+`.csv","uri":"https://generativelanguage.googleapis.com/v1beta/files/victim","state":"ACTIVE"}]}`)
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}
}

// The Gemini face's list of batches (and of files) is filtered by owner
// only for a GET: any other method on /v1beta/batches or /v1beta/files
// was passed upstream as it came ("a method the API refuses"), its
// headers too (now: a 405, and a method override header a 400). Google's front end takes POST + X-HTTP-Method-Override:
// GET as the GET, so ka read the unfiltered list of every batch made
// under the shared key — kb's, and the dispatcher's own — with their
// inlined responses (genai v1.77.0 listBatchJobsResponseFromMldev reads
// each listed operation with batchJobFromMldev, inlinedResponses
// included), and every file's metadata.
func TestHeldGeminiListByMethodOverride(t *testing.T) {
	ts, _ := heldServer(t, googleFrontEnd())

	if code, b := heldCall(t, ts, "POST", "kb", "/gemini/v1beta/models/gemini-2.5-flash:batchGenerateContent",
		`{"batch":{"inputConfig":{"requests":{"requests":[{"request":{"contents":[{"parts":[{"text":"kb's payroll"}]}]},"metadata":{"key":"1"}}]}}}}`); code != 200 {
		t.Fatalf("kb's batch: %d %s", code, b)
	}
	for _, kind := range []string{"batches", "files"} {
		// Control: ka's GET of the list is filtered.
		if code, b := heldCall(t, ts, "GET", "ka", "/gemini/v1beta/"+kind, ""); code != 200 || strings.Contains(b, victimSecret) {
			t.Fatalf("control, ka's GET /v1beta/%s: %d %s", kind, code, b)
		}
		code, b := heldCall(t, ts, "POST", "ka", "/gemini/v1beta/"+kind, "pageSize=100",
			"X-HTTP-Method-Override", "GET", "Content-Type", "application/x-www-form-urlencoded")
		if strings.Contains(b, victimSecret) {
			t.Errorf("ka's POST /v1beta/%s with X-HTTP-Method-Override: GET reads the unfiltered list: %d %s", kind, code, b)
		}
		// A form POST without the header, which a front end may route
		// to the GET it only has, is not passed on either.
		if code, b := heldCall(t, ts, "POST", "ka", "/gemini/v1beta/"+kind, "pageSize=100",
			"Content-Type", "application/x-www-form-urlencoded"); code != http.StatusMethodNotAllowed {
			t.Errorf("ka's form POST /v1beta/%s: %d %s, want 405", kind, code, b)
		}
	}
}
