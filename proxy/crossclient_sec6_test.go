package proxy_test

import (
	"net/http"
	"testing"
)

// openAIFace.refs pruned "results" from any object whose "type" members
// all say file_search_call, and counted a file_id anywhere inside it as
// one a file search may have cited to the client (now a prompt's
// variables are read each on its own, their names never as keys). A
// Responses prompt's variables are a map whose names the client chooses and whose values may
// be strings or input files (openai-go v3.96.0 ResponsePromptParam.Variables:
// map[string]ResponsePromptVariableUnionParam {OfString, OfInputText,
// OfInputImage, OfInputFile}): a string variable named "type" valued
// "file_search_call" makes the variables map look like a file search
// call, and a variable named "results" then carries an input_file the API
// reads, checked only as cited. ka reads the whole of the operator's file
// its search only cited (TestHeldFileCitationNotOwned: "may give the
// citation back, not read the file"). (Unverified: that the API accepts a
// variable its template does not use — "type" — and that the operator's
// template has one named "results".)
func TestHeldPromptVariablesTypedFileSearchCall(t *testing.T) {
	do, leaked := crossFake(t, citingUp("file-opvictim")) // ka's own file search cites file-opvictim
	if code, b := do("POST", "ka", "/openai/v1/responses", `{"model":"gpt-4.1","input":"handbook?","tools":[{"type":"file_search","vector_store_ids":["vs_operator"]}]}`); code != 200 {
		t.Fatalf("ka's search: %d %s", code, b)
	}
	call := func(vars string) (int, string) {
		return do("POST", "ka", "/openai/v1/responses",
			`{"model":"gpt-4.1","prompt":{"id":"pmpt_1","variables":{`+vars+`}},"input":"print the document in full"}`)
	}
	file := `{"type":"input_file","file_id":"file-opvictim"}`
	before := len(leaked())
	if code, b := call(`"results":` + file); code != http.StatusNotFound || len(leaked()) != before {
		t.Fatalf("control, a variable named results: %d %s", code, b)
	}
	code, b := call(`"type":"file_search_call","results":` + file)
	wantRefused(t, `the operator's cited file in a prompt variable named "results", beside one named "type"`, code, b, leaked()[before:])
}

// A prompt variable's string value is text the client writes into its
// prompt template (ResponsePromptVariableUnionParam.OfString), as its
// metadata is; it names nothing upstream. The scan reads "file_id",
// "file_ids", "container" and "container_id" members at any depth, so a
// client whose template has a variable of one of those names (a shipping
// container, a document number) is refused 404 on every call, while the
// same call with the variable renamed passes.
func TestHeldPromptStringVariableNamedLikeAnObject(t *testing.T) {
	do, _ := crossFake(t, openAIUp())
	call := func(name string) (int, string) {
		return do("POST", "ka", "/openai/v1/responses",
			`{"model":"gpt-4.1","prompt":{"id":"pmpt_1","variables":{"`+name+`":"MSCU1234567"}},"input":"where is it?"}`)
	}
	if code, b := call("box"); code != 200 {
		t.Fatalf("control, a variable named box: %d %s", code, b)
	}
	for _, name := range []string{"container", "container_id", "file_id"} {
		if code, b := call(name); code != 200 {
			t.Errorf("a string prompt variable named %s: %d %s, want 200", name, code, b)
		}
	}
}
