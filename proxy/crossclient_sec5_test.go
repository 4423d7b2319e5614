package proxy_test

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

// openAIFace.refs read an object's file_id only when its "type" members
// did not all say file_search_call (then only file_ids was read: the
// object's own file_id was never checked) or file_citation (then file_id
// was checked against "cited:<id>", a file a search cited, not an owned
// one); now a file_id is always read, and a citation counts only among
// an output text's annotations. A chat completion's file content part keeps its file_id in an
// inner object that has no "type" of its own (openai-go v3.96.0
// ChatCompletionContentPartFileFileParam {file_data, file_id, filename}):
// a "type" member added there is no discriminator the API reads, yet it
// switches the check. (Unverified: that the API ignores, rather than
// refuses, the extra member in content[].file.)
func TestHeldChatFilePartTypedAsCitation(t *testing.T) {
	do, leaked := crossFake(t, citingUp("file-operator")) // ka's own file search cites file-operator
	if code, b := do("POST", "kb", "/openai/v1/files", `x`); code != 200 || !strings.Contains(b, "file-victim") {
		t.Fatalf("kb's upload: %d %s", code, b)
	}
	chat := func(file string) string {
		return `{"model":"gpt-4.1","messages":[{"role":"user","content":[{"type":"file","file":` + file + `},{"type":"text","text":"print it"}]}]}`
	}
	before := len(leaked())
	code, b := do("POST", "ka", "/openai/v1/chat/completions", chat(`{"type":"file_search_call","file_id":"file-victim"}`))
	wantRefused(t, `kb's file in a chat file part typed "file_search_call"`, code, b, leaked()[before:])

	// The operator's file a search cited to ka: ka may give the citation
	// back, not read the file (TestHeldFileCitationNotOwned).
	if code, b := do("POST", "ka", "/openai/v1/responses", `{"model":"gpt-4.1","input":"handbook?","tools":[{"type":"file_search","vector_store_ids":["vs_operator"]}]}`); code != 200 {
		t.Fatalf("ka's search: %d %s", code, b)
	}
	if code, b := do("POST", "ka", "/openai/v1/chat/completions", chat(`{"file_id":"file-operator"}`)); code != http.StatusNotFound {
		t.Fatalf("control: ka reads the cited file by a plain file part: %d %s, want 404", code, b)
	}
	if code, b := do("POST", "ka", "/openai/v1/chat/completions", chat(`{"type":"file_citation","file_id":"file-operator"}`)); code != http.StatusNotFound {
		t.Errorf(`ka reads the operator's file cited to it by a chat file part typed "file_citation": %d %s, want 404`, code, b)
	}
}

// A file a search cites is the operator's, cited to every client whose
// search finds it; its citation was recorded in the owners book under one
// key for all ("cited:<file id>"), which keeps its first owner: the
// second client cited the same file was refused giving back its own
// search's output, and the 404 told it that another client's search had
// cited that file first. Now a citation is recorded per client.
func TestHeldCitationOfAFileCitedToAnother(t *testing.T) {
	var n atomic.Int64
	do, _ := crossFake(t, func(w http.ResponseWriter, r *http.Request) {
		id := strconv.FormatInt(n.Add(1), 10) // each answer's own response and item ids
		answerJSON(w, `{"id":"resp_`+id+`","object":"response","created_at":1,"status":"completed","model":"gpt-4.1","output":[`+
			`{"id":"msg_`+id+`","type":"message","role":"assistant","status":"completed","content":[{"type":"output_text","text":"25 days",`+
			`"annotations":[{"type":"file_citation","file_id":"file-operator","filename":"handbook.pdf","index":3}]}]}],`+
			`"usage":{"input_tokens":1,"output_tokens":1,"total_tokens":2}}`)
	})
	tools := `"tools":[{"type":"file_search","vector_store_ids":["vs_operator"]}]`
	back := `{"model":"gpt-4.1",` + tools + `,"input":[{"role":"user","content":"leave?"},` +
		`{"type":"message","role":"assistant","status":"completed","content":[{"type":"output_text","text":"25 days",` +
		`"annotations":[{"type":"file_citation","file_id":"file-operator","filename":"handbook.pdf","index":3}]}]},` +
		`{"role":"user","content":"and part-timers?"}]}`
	for _, key := range []string{"ka", "kb"} {
		if code, b := do("POST", key, "/openai/v1/responses", `{"model":"gpt-4.1","input":"leave?",`+tools+`}`); code != 200 {
			t.Fatalf("%s's search: %d %s", key, code, b)
		}
		if code, b := do("POST", key, "/openai/v1/responses", back); code != 200 {
			t.Errorf("%s gives back the citation its own search got: %d %s, want 200", key, code, b)
		}
	}
}

// citingUp is openAIUp, but a Responses call asking about the "handbook"
// is answered as a file search that cited the file id (the operator's,
// read through a vector store).
func citingUp(id string) http.HandlerFunc {
	up := openAIUp()
	return func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/responses" {
			b, _ := io.ReadAll(r.Body)
			if strings.Contains(string(b), "handbook") {
				answerJSON(w, `{"id":"resp_a","object":"response","created_at":1,"status":"completed","model":"gpt-4.1","output":[`+
					`{"id":"msg_a","type":"message","role":"assistant","status":"completed","content":[{"type":"output_text","text":"25 days",`+
					`"annotations":[{"type":"file_citation","file_id":"`+id+`","filename":"handbook.pdf","index":3}]}]}],`+
					`"usage":{"input_tokens":1,"output_tokens":1,"total_tokens":2}}`)
				return
			}
			r.Body = io.NopCloser(strings.NewReader(string(b)))
		}
		up(w, r)
	}
}
