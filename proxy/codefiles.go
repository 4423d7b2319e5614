package proxy

import (
	"net/http"
	"strings"
)

// This file lets a client, in proxy-held-key mode, read the files its own
// code wrote (what its answers named, recorded as its own: heldrefs.go):
// an Anthropic code execution's output files (the Files API's GET of one
// file and of its content) and an OpenAI container's files (GET of one
// container file and of its content). Nothing else of those APIs passes
// under the shared key.

// codeFileIDs returns the ids a GET of one code output file names, in
// the order its path names them, for the Anthropic face
// (/v1/files/{id}[/content]) or the OpenAI face
// (/v1/containers/{cid}/files/{fid}[/content]); nil for another path.
func codeFileIDs(openAI bool, path string) []string {
	parts := strings.Split(strings.TrimPrefix(path, "/v1/"), "/")
	if len(parts) > 0 && parts[len(parts)-1] == "content" {
		parts = parts[:len(parts)-1]
	}
	switch {
	case !openAI && len(parts) == 2 && parts[0] == "files":
		return parts[1:]
	case openAI && len(parts) == 4 && parts[0] == "containers" && parts[2] == "files":
		return []string{parts[1], parts[3]}
	}
	return nil
}

// serveCodeFile serves a GET of a code output file (codeFileIDs gives
// ids) through the gate g: only if the path reaches upstream as it was
// checked and every id it names is the client's (else 404, as for an
// unknown id).
func serveCodeFile(w http.ResponseWriter, r *http.Request, g ownerGate, ids []string) {
	if r.Method != http.MethodGet {
		g.f.refuse(w, g.f.says(notShared, r.Method+" "+r.URL.Path))
		return
	}
	for _, id := range ids {
		if r.URL.EscapedPath() != r.URL.Path || id == "" || id == "." || id == ".." {
			g.f.refuse(w, g.f.says(fileNotFound, id))
			return
		}
		if !g.owns(w, r, id, fileNotFound) {
			return
		}
	}
	fullDuplex(w)
	g.up.ServeHTTP(w, r)
}
