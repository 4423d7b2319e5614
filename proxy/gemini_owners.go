package proxy

import (
	"net/http"
	"strings"

	"github.com/llmfleet/llmfleet/geminiwire"
)

// owned reports whether path (of the Gemini API) is of its Batch Mode or
// Files API: what a client makes there is its own in proxy-held-key mode,
// where every client's batches and files are made under the one upstream
// key.
func (f geminiFace) owned(path string) bool {
	_, m, ok := geminiMethod(path)
	if ok && m == "batchGenerateContent" && strings.HasPrefix(path, "/"+geminiwire.Version+"/") {
		return true
	}
	for _, p := range []string{"/" + geminiwire.Version + "/batches", "/" + geminiwire.Version + "/files", "/upload/" + geminiwire.Version + "/files", "/download/" + geminiwire.Version + "/files"} {
		if path == p || strings.HasPrefix(path, p+"/") {
			return true
		}
	}
	return false
}

// shared reports whether a pass-through call may go upstream under a key
// every client shares: reads of the models, and the model methods that
// keep nothing (countTokens, embeddings). Everything else the API keeps
// under a key (cached contents, tuned models, ...) would show one client
// what another made.
// geminiBilled is the Gemini face's faceTraits.billed: a batch created,
// embeddings.
func geminiBilled(method, path string) (bool, bool) {
	_, m, ok := geminiMethod(path)
	if !ok || method != http.MethodPost {
		return false, false
	}
	switch m {
	case "batchGenerateContent", "asyncBatchEmbedContent":
		return true, true
	case "embedContent", "batchEmbedContents":
		return true, false
	}
	return false, false
}

func (f geminiFace) shared(method, path string) bool {
	if method == http.MethodGet {
		rest, _, ok := geminiwire.Unversioned(path)
		id, isModel := strings.CutPrefix(rest, "/models/")
		// A model, not what is kept under it (its operations: a
		// long-running call's, made under the shared key).
		return ok && (rest == "/models" || isModel && !strings.ContainsAny(id, ":/"))
	}
	_, m, ok := geminiMethod(path)
	return ok && method == http.MethodPost && (m == "countTokens" || m == "embedContent" || m == "batchEmbedContents")
}
