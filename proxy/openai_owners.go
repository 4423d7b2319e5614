package proxy

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
)

// owned reports whether path (of the OpenAI API) is of its Files or
// Batches API: what a client makes there is its own in proxy-held-key
// mode, where every client's files and batches are made under the one
// upstream key.
func (f openAIFace) owned(path string) bool {
	if codeFileIDs(true, path) != nil {
		return true // a file the client's code wrote (codefiles.go)
	}
	for _, p := range []string{"/v1/files", "/v1/batches"} {
		if path == p || strings.HasPrefix(path, p+"/") {
			return true
		}
	}
	// A response the client made (a background one is read, cancelled
	// and deleted by its id); a create is a routed call, and the API's
	// other calls under /v1/responses/ (input_tokens, compact) are not
	// passed on.
	return strings.HasPrefix(path, "/v1/responses/resp_")
}

// shared reports whether a pass-through call may go upstream under a key
// every client shares: only reads of the models. Everything else
// the API keeps under a key (stored completions and responses, fine-tuning
// jobs, vector stores, uploads, ...) would show one client what another
// made, so in proxy-held-key mode the OpenAI face passes on nothing else
// but the Files and Batches APIs, whose objects it tracks by owner.
// openAIBilled is the OpenAI face's faceTraits.billed: a batch created.
func openAIBilled(method, path string) (bool, bool) {
	b := method == http.MethodPost && path == "/v1/batches"
	return b, b
}

func (f openAIFace) shared(method, path string) bool {
	return method == http.MethodGet && (path == "/v1/models" || strings.HasPrefix(path, "/v1/models/"))
}

// serveOwned serves the Files and Batches APIs of the OpenAI face in
// proxy-held-key mode for the face's client (r's path is already the
// upstream one): an upload or a batch create records what it made as the
// client's (a batch only of a file of the client's), a list shows only
// the client's (ownerGate.list), and a call about one file or batch
// reaches upstream only if the client owns it, else 404 as for an unknown
// id. The output and error files of a client's batch become the client's
// when the batch is read or cancelled through the proxy.
func (f openAIFace) serveOwned(w http.ResponseWriter, r *http.Request) {
	g := gateOf(f.s, f, f.client)
	if ids := codeFileIDs(true, r.URL.Path); ids != nil {
		serveCodeFile(w, r, g, ids)
		return
	}
	kind, rest, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/v1/"), "/")
	notFound := batchNotFound
	switch kind {
	case "files":
		notFound = fileNotFound
	case "responses":
		notFound = objectNotFound
		// What its answer names (its output items; its input items, the
		// client's own, each checked as it was sent) becomes the
		// client's as it passes, as a live answer's does: read plain.
		ctx := context.WithValue(r.Context(), answerOwner{}, f.client)
		if strings.HasSuffix(rest, "/input_items") {
			ctx = context.WithValue(ctx, answerIDs{}, listIDs)
		}
		r = r.WithContext(ctx)
		r.Header.Del("Accept-Encoding")
	}
	if rest == "" {
		switch {
		case r.Method == http.MethodPost:
			f.create(w, r, g, kind)
		case r.Method == http.MethodGet:
			g.list(w, r, openAIListShape(kind))
		default:
			f.refuse(w, methodRefusal(r))
		}
		return
	}
	id, _, _ := strings.Cut(rest, "/")
	if r.URL.EscapedPath() != r.URL.Path || id == "" || id == "." || id == ".." || strings.Contains(rest, "/./") ||
		strings.Contains(rest, "/../") || strings.HasSuffix(rest, "/.") || strings.HasSuffix(rest, "/..") {
		f.refuse(w, f.says(notFound, id))
		return
	}
	if !g.owns(w, r, id, notFound) {
		return
	}
	if kind == "batches" && (r.Method == http.MethodGet || r.Method == http.MethodPost) {
		r.Header.Del("Accept-Encoding") // read here: plain, please
		rec := newRecorder()
		g.up.ServeHTTP(rec, r)
		if rec.Status() == http.StatusOK && !f.recordBatchFiles(w, r, g, rec.Body()) {
			return
		}
		writeTo(w, rec, rec.Body())
		return
	}
	fullDuplex(w)
	g.up.ServeHTTP(w, r)
}

// create passes an upload or a batch create upstream and records what it
// made as the client's before answering. A batch create naming an input
// file that is not the client's is answered 404 at once.
func (f openAIFace) create(w http.ResponseWriter, r *http.Request, g ownerGate, kind string) {
	if kind == "batches" {
		body, e := f.s.bodies.read(r)
		if e != nil {
			f.refuse(w, &refusal{status: e.status, typ: "invalid_request_error", msg: e.msg})
			return
		}
		// Every input_file_id the body holds (a repeated one too: a
		// reader may take either) must name one of the client's files.
		files, ok := memberStrings(body, []string{"input_file_id"})
		if !ok {
			f.refuse(w, &refusal{status: http.StatusBadRequest, typ: "invalid_request_error",
				msg: "The request body must be a JSON object, e.g. {\"input_file_id\": \"file-abc\", \"endpoint\": \"/v1/chat/completions\", \"completion_window\": \"24h\"}."})
			return
		}
		for _, id := range files {
			if id != "" && !g.owns(w, r, id, fileNotFound) {
				return
			}
		}
		// Its requests are checked as routed calls are: they may name
		// files, containers, stored responses.
		for _, id := range files {
			if id != "" && !f.checkInputFile(w, r, g, id) {
				return
			}
		}
		putBack(r, body)
	}
	rec, ok := g.create(w, r)
	if !ok {
		return
	}
	if rec.Status() == http.StatusOK && kind == "batches" && !f.recordBatchFiles(w, r, g, rec.Body()) {
		return
	}
	writeTo(w, rec, rec.Body())
}

// recordBatchFiles records the output and error files a batch object of
// the client's names as the client's; false means it answered an error.
func (f openAIFace) recordBatchFiles(w http.ResponseWriter, r *http.Request, g ownerGate, batch []byte) bool {
	var b struct {
		OutputFileID *string `json:"output_file_id"`
		ErrorFileID  *string `json:"error_file_id"`
	}
	json.Unmarshal(batch, &b)
	for _, id := range []*string{b.OutputFileID, b.ErrorFileID} {
		if id == nil || *id == "" {
			continue
		}
		if err := g.book.record(r.Context(), *id, g.client); err != nil {
			g.state(w, r, "owner of a batch's file not recorded", err)
			return false
		}
	}
	return true
}

// openAIList is a page of a list of files or batches, as the API answers
// it.
type openAIList struct {
	Object  string            `json:"object"`
	Data    []json.RawMessage `json:"data"`
	FirstID *string           `json:"first_id"`
	LastID  *string           `json:"last_id"`
	HasMore bool              `json:"has_more"`
}

// openAIListShape is how the Files (kind "files") and Batches APIs list:
// from the client's after cursor, in upstream pages of 100.
func openAIListShape(kind string) listShape {
	limit := 20
	if kind == "files" {
		limit = 10000
	}
	return listShape{pageSize: 100, defLimit: limit, maxLimit: limit, after: "after", pass: []string{"purpose", "order"},
		render: func(kept []json.RawMessage, hasMore bool, first, last *string) any {
			return openAIList{Object: "list", Data: kept, FirstID: first, LastID: last, HasMore: hasMore}
		}}
}
