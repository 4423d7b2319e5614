package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/llmfleet/llmfleet/jsonmember"
	"github.com/llmfleet/llmfleet/sse"
)

// This file keeps a routed call, in proxy-held-key mode, from naming what
// another client made under the key they share: a file, a stored output
// item, a code-execution container. A call's body may name such objects
// at any depth (a content part's file_id, a tool's container); every one
// must be recorded as the caller's (ownerBook), as its uploads, batches
// and responses are, or the call is refused as one naming an unknown
// object. What a client's answers name (the containers its code ran in,
// the files that code wrote, the items of its responses) is recorded as
// the client's as the answer passes (ownedAnswer).

// objectRef is an object a body names: its kind, for the refusal (a
// file's is fileNotFound), and its id.
type objectRef struct {
	file bool
	kind string // "container", "item"
	id   string
	// cited says a file may be one a file search cited to the client
	// (citedKey), given back, as well as one of its own.
	cited bool
}

// refsOf returns the objects body, a valid JSON text (uncheckable has
// seen to it), names, as refs finds them in each of its objects, at any
// depth.
func refsOf(body []byte, refs func(obj []byte, add func(objectRef)) (skip func([]byte) bool)) []objectRef {
	var out []objectRef
	add := func(r objectRef) {
		if r.id != "" {
			out = append(out, r)
		}
	}
	jsonmember.ObjectsPruned(withoutMetadata(body), func(obj []byte) func([]byte) bool { return refs(obj, add) })
	return out
}

// withoutMetadata returns body, a JSON text, without the top-level
// members named metadata (in any case): a request's metadata is the
// client's to fill as it likes, and the API names nothing by it. A member
// of that name deeper in (a prompt variable's) is read as any other.
func withoutMetadata(body []byte) []byte {
	ms, err := jsonmember.Members(body)
	if err != nil {
		return body
	}
	for _, m := range ms {
		if strings.EqualFold(m.Key, "metadata") {
			if b, err := jsonmember.Delete(body, m.Key); err == nil {
				return withoutMetadata(b)
			}
		}
	}
	return body
}

// memberKey reports whether raw, a member's raw key, is one of names,
// regardless of case and escapes.
func memberKey(raw []byte, names ...string) bool {
	k := jsonmember.Key(raw)
	for _, n := range names {
		if strings.EqualFold(string(k), n) {
			return true
		}
	}
	return false
}

// stringsOf returns v as strings: a string, or the strings of an array.
func stringsOf(v []byte) []string {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return []string{s}
	}
	var ss []string
	json.Unmarshal(v, &ss)
	return ss
}

// fileRefs adds the files obj names in members of the given names (a
// string, or an array of strings).
func fileRefs(obj []byte, add func(objectRef), names ...string) {
	jsonmember.Scan(obj, func(k, v []byte) bool {
		if memberKey(k, names...) {
			for _, id := range stringsOf(v) {
				add(objectRef{file: true, id: id})
			}
		}
		return true
	})
}

// unowned returns the first of refs not recorded as client's, or the
// error reading an owner.
func (b ownerBook) unowned(ctx context.Context, refs []objectRef, client string) (*objectRef, error) {
	for i, r := range refs {
		owned, err := b.owns(ctx, r.id, client)
		if err == nil && !owned && r.cited {
			owned, err = b.owns(ctx, citedKey(client, r.id), client)
		}
		if err != nil || !owned {
			return &refs[i], err
		}
	}
	return nil, nil
}

// ownedAnswer wraps the body of a 200 answer to the client named client
// so that the objects it names (ids reads them from a JSON text) are
// recorded as the client's before the client reads them: a JSON answer is
// read whole first; an event stream's each event as it ends, before the
// bytes that end it are handed on.
func (b ownerBook) ownedAnswer(ctx context.Context, client string, res *http.Response, ids func([]byte) []string) io.ReadCloser {
	seen := map[string]bool{}
	record := func(data []byte) {
		for _, id := range ids(data) {
			if id != "" && !seen[id] {
				seen[id] = true
				b.recordNamed(ctx, client, id)
			}
		}
	}
	if !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		return &wholeBody{body: res.Body, done: record}
	}
	return &tappedBody{body: res.Body, tap: &sse.Decoder{MaxData: maxKept, Emit: func(e sse.Event) { record(e.Data) }}}
}

// refIDs returns what an id member names: a string, the strings of an
// array, or an object's "id".
func refIDs(v []byte) []string {
	if ss := stringsOf(v); len(ss) > 0 {
		return ss
	}
	var obj struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(v, &obj) == nil && obj.ID != "" {
		return []string{obj.ID}
	}
	return nil
}

// geminiFileName returns the Files API name a fileUri names ("files/x"):
// ok is false for a URI of something else (a video's page, a bucket's
// object). A URI that may name a file but not in the one form the API
// hands out (https://generativelanguage.googleapis.com/<version>/files/<id>,
// or files/<id>) names itself, which no client owns: it is refused rather
// than read otherwise than the API reads it.
func geminiFileName(uri string) (name string, ok bool) {
	lower := strings.ToLower(uri)
	if !strings.Contains(lower, "files/") && !strings.Contains(lower, "googleapis") {
		return "", false
	}
	if m := geminiFileURI.FindStringSubmatch(uri); m != nil {
		return "files/" + m[1], true
	}
	return uri, true
}

// geminiFileURI matches a file's URI as the Files API hands it out.
var geminiFileURI = regexp.MustCompile(`^(?:https://generativelanguage\.googleapis\.com/v1(?:beta|alpha)?/)?files/([a-z0-9-]+)$`)

// heldRefusal returns, with proxy-held keys, the refusal of a call of the
// face f by the client named client whose body names an object (as f.refs
// finds them) that is not the client's; nil without proxy-held keys.
func heldRefusal(s *Server, r *http.Request, f mountedFace, client string, body []byte) *refusal {
	if s.Credentials == nil {
		return nil
	}
	if e := uncheckable(r, body); e != nil {
		return e
	}
	ref, err := bookOf(s).unowned(r.Context(), refsOf(body, f.refs), client)
	switch {
	case err != nil:
		logStateError(s.log, r, "owner lookup failed", err)
		return f.says(stateFailed, "")
	case ref == nil:
		return nil
	case ref.file:
		return f.says(fileNotFound, ref.id)
	}
	return f.says(objectNotFound, ref.kind+" "+strconv.Quote(ref.id))
}

// refs: files (file_id, file_ids: a content part's, a code interpreter
// container's), a container named by id (a code interpreter's, a shell's),
// an item a Responses input refers to (item_reference), and a spoken
// answer a chat's assistant message gives back (audio's id). A file a file
// search cited to the client may be given back with the output it came
// in: in a file_citation among an output text's annotations, or in a
// file_search_call's results (citedKey).
func (f openAIFace) refs(obj []byte, add func(objectRef)) (skip func([]byte) bool) {
	typ := refType(obj)
	var ids []string
	jsonmember.Scan(obj, func(k, v []byte) bool {
		var s string
		switch {
		case memberKey(k, "audio"):
			var a struct {
				ID string `json:"id"`
			}
			if json.Unmarshal(v, &a) == nil {
				add(objectRef{kind: "audio", id: a.ID})
			}
		case memberKey(k, "container", "container_id"):
			for _, id := range refIDs(v) { // an id, or an object with one
				add(objectRef{kind: "container", id: id})
			}
		case memberKey(k, "id"):
			if json.Unmarshal(v, &s) == nil {
				ids = append(ids, s)
			}
		case memberKey(k, "annotations"):
			annotationRefs(f, v, add)
		case memberKey(k, "results") && typ == "file_search_call":
			jsonmember.Objects(v, func(r []byte) bool { citedRefs(r, add); return true })
		case memberKey(k, "variables"):
			// A prompt's variables: their names are the client's, a
			// string is text; a variable that is an object (an input
			// file, an image) is read as one, on its own.
			jsonmember.Scan(v, func(_, val []byte) bool {
				jsonmember.ObjectsPruned(val, func(o []byte) func([]byte) bool { return f.refs(o, add) })
				return true
			})
		}
		return true
	})
	if typ == "item_reference" {
		for _, id := range ids {
			add(objectRef{kind: "item", id: id})
		}
	}
	fileRefs(obj, add, "file_id", "file_ids")
	return func(k []byte) bool {
		return memberKey(k, "annotations", "variables") || typ == "file_search_call" && memberKey(k, "results")
	}
}

// refType returns the type an object of an OpenAI request says it is:
// item_reference if one of its type members says so; else the one they
// all say ("?" if they differ).
func refType(obj []byte) string {
	typ := ""
	jsonmember.Scan(obj, func(k, v []byte) bool {
		var s string
		if !memberKey(k, "type") {
			return true
		}
		switch json.Unmarshal(v, &s); {
		case typ == "item_reference":
		case s == "item_reference", typ == "" || typ == s:
			typ = s
		default:
			typ = "?"
		}
		return true
	})
	return typ
}

// annotationRefs adds what an output text's annotations (v) name: a
// file_citation's file as one a file search may have cited to the
// client; any other's as f.refs finds it.
func annotationRefs(f openAIFace, v []byte, add func(objectRef)) {
	jsonmember.Objects(v, func(a []byte) bool {
		if refType(a) == "file_citation" {
			citedRefs(a, add)
			jsonmember.Scan(a, func(k, v []byte) bool {
				if memberKey(k, "file_ids") {
					for _, id := range stringsOf(v) {
						add(objectRef{file: true, id: id})
					}
				}
				return true
			})
			return true
		}
		f.refs(a, add)
		return true
	})
}

// citedRefs adds the files obj names (file_id) as ones a file search may
// have cited to the client (citedKey).
func citedRefs(obj []byte, add func(objectRef)) {
	fileRefs(obj, func(r objectRef) { r.cited = true; add(r) }, "file_id")
}

// citedPrefix marks, among the ids an answer names (openAIAnswerIDs), a
// file a file search cited: recordNamed records it as cited to the
// client (citedKey).
const citedPrefix = "\x00cited:"

// citedKey is the key under which a file a file search cited to client
// (the operator's, read through a vector store) is recorded: the client
// may give the citation back, not read the file.
func citedKey(client, id string) string { return "cited:" + client + ":" + id }

// refs: files (file_id: a document's or image's source, a container
// upload), the code execution container ("container", an id or an object
// with one), and a message diagnosed against (diagnostics'
// previous_message_id, which tells how the call differs from it). What a
// tool call given back carries as its input is the client's own to
// write, and a tool's input schema too: they name nothing upstream.
func (f anthropicFace) refs(obj []byte, add func(objectRef)) (skip func([]byte) bool) {
	fileRefs(obj, add, "file_id")
	toolCall := false
	jsonmember.Scan(obj, func(k, v []byte) bool {
		var s string
		switch {
		case memberKey(k, "container"):
			for _, id := range refIDs(v) {
				add(objectRef{kind: "container", id: id})
			}
		case memberKey(k, "previous_message_id"):
			for _, id := range refIDs(v) {
				add(objectRef{kind: "message", id: id})
			}
		case memberKey(k, "type"):
			toolCall = toolCall || json.Unmarshal(v, &s) == nil && strings.HasSuffix(s, "tool_use")
		}
		return true
	})
	return func(k []byte) bool { return memberKey(k, "input_schema") || toolCall && memberKey(k, "input") }
}

// refs: files of the Files API a part's fileData names (fileUri, in
// either spelling Google's JSON reader takes).
func (f geminiFace) refs(obj []byte, add func(objectRef)) (skip func([]byte) bool) {
	jsonmember.Scan(obj, func(k, v []byte) bool {
		var uri string
		if memberKey(k, "fileUri", "file_uri") && json.Unmarshal(v, &uri) == nil {
			if name, ok := geminiFileName(uri); ok {
				add(objectRef{file: true, id: name})
			}
		}
		return true
	})
	return nil
}

// refsOfBody reads the body of r, a call of f by the client named client
// with proxy-held keys, and returns the refusal of what it names that is
// not the client's (heldRefusal); else the body is put back, to be passed
// on.
func (s *Server) refsOfBody(r *http.Request, f mountedFace, client string) *refusal {
	body, e := s.bodies.read(r)
	if e != nil {
		return refusalOf(e)
	}
	if e := heldRefusal(s, r, f, client, body); e != nil {
		return e
	}
	putBack(r, body)
	return nil
}

// uncheckable returns, with proxy-held keys, the refusal of a body that
// cannot be checked for what it names: an encoded one (gzip, ...), or one
// that is not strictly JSON (a byte order mark, NaN), which a lenient
// reader upstream might take all the same.
func uncheckable(r *http.Request, body []byte) *refusal {
	if ce := r.Header.Get("Content-Encoding"); ce != "" && !strings.EqualFold(ce, "identity") {
		return &refusal{status: http.StatusUnsupportedMediaType, typ: "invalid_request_error",
			msg: "This llmfleet holds one key for all its clients and checks what each request names: send the body unencoded (no Content-Encoding)."}
	}
	// Another form of the body (Google's JSON+protobuf arrays, named by
	// the Content-Type or by a $ct parameter) names its fields by place.
	ct := false
	for k := range r.URL.Query() {
		ct = ct || systemParam(k) == "ct"
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); r.Header.Get("Content-Type") != "" && (err != nil || mt != "application/json") || ct {
		return &refusal{status: http.StatusUnsupportedMediaType, typ: "invalid_request_error",
			msg: "This llmfleet holds one key for all its clients and checks what each request names: send the body as application/json."}
	}
	if !json.Valid(body) || bytes.TrimLeft(body, " \t\r\n")[0] != '{' {
		return &refusal{status: http.StatusBadRequest, typ: "invalid_request_error",
			msg: "The request body is not a JSON object: send it as plain JSON (its names and strings in double quotes), without a byte order mark."}
	}
	return nil
}
