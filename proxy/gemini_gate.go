package proxy

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/llmfleet/llmfleet/geminiwire"
)

// This file serves, in proxy-held-key mode, the Gemini face's Batch Mode
// and Files APIs by owner: what a client makes (a batch, an uploaded
// file, a batch's responses file) is recorded as its own under its
// resource name ("batches/x", "files/y"), a list shows only the client's,
// and a call about one batch or file reaches upstream only if the client
// owns it, else 404 as for an unknown name. Google's lists page by
// pageSize and pageToken, and name objects by "name": a shape the
// ownerGate's lists (listShape: data, has_more, limit, id cursors) do not
// take, so the face pages its lists itself, filtered by the gate's owners
// (ownerGate.mine, by name).

// geminiGate is the owner gate of the Gemini face's client.
type geminiGate struct {
	f geminiFace
	g ownerGate
}

// serveOwned serves the Batch Mode and Files APIs for the face's client
// (r's path is already the upstream one).
func (f geminiFace) serveOwned(w http.ResponseWriter, r *http.Request) {
	gg := geminiGate{f: f, g: gateOf(f.s, f, f.client)}
	gg.g.name = nameOf // Google's objects are named by "name"
	v := "/" + geminiwire.Version
	path := r.URL.Path
	switch {
	case strings.HasPrefix(path, v+"/models/"): // :batchGenerateContent
		gg.createBatch(w, r)
	case strings.HasPrefix(path, "/upload/"):
		// An upload is a POST to the collection (its session's chunks
		// too, by a query); nothing else goes under the shared key here.
		switch {
		case path != "/upload"+v+"/files":
			gg.f.refuse(w, gg.f.says(fileNotFound, strings.TrimPrefix(path, "/upload"+v+"/")))
		case r.Method != http.MethodPost:
			gg.f.refuse(w, methodRefusal(r))
		default:
			gg.upload(w, r)
		}
	case path == v+"/batches" || path == v+"/files":
		if r.Method != http.MethodGet {
			gg.f.refuse(w, methodRefusal(r)) // (a form POST may be taken for a GET upstream)
			return
		}
		gg.list(w, r, strings.TrimPrefix(path, v+"/"))
	default:
		gg.one(w, r)
	}
}

// one serves a call about one batch or file: the client's own only.
// A batch read or cancelled names its responses file, which becomes the
// client's.
func (gg geminiGate) one(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	rest := strings.TrimPrefix(strings.TrimPrefix(path, "/download"), "/"+geminiwire.Version+"/")
	kind, id, _ := strings.Cut(rest, "/")
	id, _, _ = strings.Cut(id, ":")
	notFound := batchNotFound
	if kind == "files" {
		notFound = fileNotFound
	}
	name := kind + "/" + id
	if r.URL.EscapedPath() != path || id == "" || id == "." || id == ".." || strings.Contains(strings.TrimPrefix(rest, name), "/") {
		gg.f.refuse(w, gg.f.says(notFound, name))
		return
	}
	if !gg.g.owns(w, r, name, notFound) {
		return
	}
	if r.Method == http.MethodDelete {
		gg.delete(w, r, name)
		return
	}
	if kind != "batches" {
		fullDuplex(w)
		gg.g.up.ServeHTTP(w, r)
		return
	}
	if _, m, _ := strings.Cut(rest, ":"); r.Method != http.MethodGet && m != "cancel" && !gg.checkBatch(w, r, nil) {
		return // an update (its body a batch) names only what is the client's
	}
	r.Header.Del("Accept-Encoding") // read here: plain, please
	rec := newRecorder()
	gg.g.up.ServeHTTP(rec, r)
	if rec.Status() == http.StatusOK && !gg.recordOutput(w, r, rec.Body()) {
		return
	}
	writeTo(w, rec, rec.Body())
}

// delete passes the deletion of the client's batch or file name upstream
// and, once done, forgets its owner: Gemini lets a client name the files
// it uploads, and the name may be made again, by another client too.
func (gg geminiGate) delete(w http.ResponseWriter, r *http.Request, name string) {
	rec := newRecorder()
	gg.g.up.ServeHTTP(rec, r)
	if rec.Status() == http.StatusOK {
		if err := gg.g.book.forget(r.Context(), name); err != nil {
			// The name stays the client's: no one else reaches what may
			// be made under it until it is made again (created).
			logStateError(gg.g.book.log, r, "object deleted upstream but its owner not forgotten: "+name, err)
		}
	}
	writeTo(w, rec, rec.Body())
}

// recordOutput records the responses file a batch operation names as the
// client's; false means it answered an error.
func (gg geminiGate) recordOutput(w http.ResponseWriter, r *http.Request, op []byte) bool {
	var o geminiwire.Operation
	json.Unmarshal(op, &o)
	for _, out := range []*geminiwire.BatchOutput{o.Response, batchOutput(o.Metadata)} {
		if out == nil || out.ResponsesFile == "" {
			continue
		}
		if err := gg.g.book.record(r.Context(), out.ResponsesFile, gg.g.client); err != nil {
			gg.g.state(w, r, "owner of a batch's file not recorded", err)
			return false
		}
	}
	return true
}

// batchOutput returns the output of a batch's metadata, if any.
func batchOutput(b *geminiwire.Batch) *geminiwire.BatchOutput {
	if b == nil {
		return nil
	}
	return b.Output
}

// createBatch passes a batchGenerateContent upstream, its input file the
// client's own, and records the batch it made as the client's.
func (gg geminiGate) createBatch(w http.ResponseWriter, r *http.Request) {
	if gg.checkBatch(w, r, []string{"batch"}) {
		gg.created(w, r, func(_ http.Header, b []byte) string { return nameOf(b) })
	}
}

// checkBatch reads the body of r, a batch's create ({"batch": {...}}: at
// is ["batch"]) or update (the batch itself: at nil), and answers the
// refusal of a body naming a file not the client's: its input file, a
// file its inlined requests name, or one the requests of its input file
// name. It reports whether r, its body put back, may go on.
func (gg geminiGate) checkBatch(w http.ResponseWriter, r *http.Request, at []string) bool {
	body, e := gg.f.s.bodies.read(r)
	if e != nil {
		gg.f.refuse(w, refusalOf(e))
		return false
	}
	// Every file the body may name, in whichever spelling Google's JSON
	// reader takes (the camelCase names or the proto's snake_case ones),
	// must be the client's.
	path := [][]string{{"inputConfig", "input_config"}, {"fileName", "file_name"}}
	if at != nil {
		path = append([][]string{at}, path...)
	}
	files, ok := memberStrings(body, path...)
	if !ok {
		example := `{"inputConfig": {"fileName": "files/abc"}}`
		if at != nil {
			example = `{"batch": ` + example + `}`
		}
		gg.f.refuse(w, &refusal{status: http.StatusBadRequest, msg: "The request body must be a JSON object, e.g. " + example + "."})
		return false
	}
	for _, name := range files {
		if name != "" && !gg.g.owns(w, r, name, fileNotFound) {
			return false
		}
	}
	// So must every file its requests name, inlined or in its input file.
	if e := heldRefusal(gg.f.s, r, gg.f, gg.g.client, body); e != nil {
		gg.f.refuse(w, e)
		return false
	}
	for _, name := range files {
		if name != "" && !gg.checkInputFile(w, r, name) {
			return false
		}
	}
	putBack(r, body)
	return true
}

// checkInputFile reads the input file name (files/...) of a batch of the
// gate's client and answers the refusal of the first of its requests that
// names a file not the client's (heldRefusal), or a failure to read it.
// It reports whether the batch may go on.
func (gg geminiGate) checkInputFile(w http.ResponseWriter, r *http.Request, name string) bool {
	return gg.g.checkInputFile(w, r, name, "/download/"+geminiwire.Version+"/"+name+":download", "alt=media",
		func(line []byte) *refusal { return heldRefusal(gg.f.s, r, gg.f, gg.g.client, line) }, "")
}

// created passes a create upstream and records the object named in its
// answer (name reads it from its headers and body, "" for none) as the
// client's before answering.
func (gg geminiGate) created(w http.ResponseWriter, r *http.Request, name func(http.Header, []byte) string) {
	r.Header.Del("Accept-Encoding")
	rec := newRecorder()
	gg.g.up.ServeHTTP(rec, r)
	if rec.Status() == http.StatusOK {
		if n := name(rec.Header(), rec.Body()); n != "" {
			if err := gg.g.book.created(r.Context(), n, gg.g.client); err != nil {
				logStateError(gg.g.book.log, r, "object created upstream but its owner not recorded: "+n, err)
				gg.f.refuse(w, gg.f.says(notRecorded, n))
				return
			}
		}
	}
	writeTo(w, rec, rec.Body())
}

// nameOf returns the resource name of an object.
func nameOf(item json.RawMessage) string {
	var b struct {
		Name string `json:"name"`
	}
	json.Unmarshal(item, &b)
	return b.Name
}

// list answers a list of batches ("operations") or files with the
// client's own only: upstream pages from the client's pageToken, with its
// pageSize, until one holds some of the client's or the list ends, in at
// most maxListCalls calls. A page is never cut: its nextPageToken pages on
// after it (a short or empty page with a token is a page as the API may
// give one).
func (gg geminiGate) list(w http.ResponseWriter, r *http.Request, kind string) {
	member := "files"
	if kind == "batches" {
		member = "operations"
	}
	r.Header.Del("Accept-Encoding")
	q := r.URL.Query()
	var kept []json.RawMessage
	var rec *recorder
	next := ""
	for range maxListCalls {
		rec = fetchWith(gg.g.up, r, q)
		if rec.Status() != http.StatusOK {
			writeTo(w, rec, rec.Body())
			return
		}
		page, err := readGeminiList(rec.Body(), member)
		if err != nil {
			gg.g.book.log.Warn("unreadable list from upstream", "path", r.URL.Path, "err", err)
			gg.f.refuse(w, gg.f.says(unreadable, ""))
			return
		}
		mine, err := gg.g.mine(r.Context(), page.items)
		if err != nil {
			gg.g.state(w, r, "owner lookup failed", err)
			return
		}
		kept, next = append(kept, mine...), page.next
		if len(kept) > 0 || next == "" {
			break
		}
		q.Set("pageToken", next)
	}
	out := map[string]any{}
	if len(kept) > 0 {
		out[member] = kept
	}
	if next != "" {
		out["nextPageToken"] = next
	}
	body, _ := json.Marshal(out)
	writeTo(w, rec, body)
}

// geminiList is a page of a Gemini list.
type geminiList struct {
	items []json.RawMessage
	next  string
}

// readGeminiList reads a page of a list whose objects are in member.
func readGeminiList(body []byte, member string) (geminiList, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		return geminiList{}, err
	}
	var l geminiList
	if v, ok := raw[member]; ok {
		if err := json.Unmarshal(v, &l.items); err != nil {
			return geminiList{}, err
		}
	}
	if v, ok := raw["nextPageToken"]; ok {
		if err := json.Unmarshal(v, &l.next); err != nil {
			return geminiList{}, err
		}
	}
	return l, nil
}
