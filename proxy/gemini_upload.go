package proxy

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/llmfleet/llmfleet/jsonmember"
)

// This file serves, in proxy-held-key mode, the Gemini face's uploads
// (POST /upload/v1beta/files): resumable only, as the SDKs upload, the
// file named by the API, each session its starter's.

// upload passes an upload upstream; an answer carrying the file made
// ({"file": {...}}, the end of an upload) records it as the client's. A
// resumable upload's session is the client's that began it: its start
// records the session (the upload_id of the X-Goog-Upload-Url answered),
// and a chunk sent to a session of another client's is refused as one
// sent to no session, else that client's bytes, finalized, would make a
// file of the sender's.
func (gg geminiGate) upload(w http.ResponseWriter, r *http.Request) {
	q, e := uploadQuery(r)
	if e != nil {
		gg.f.refuse(w, e)
		return
	}
	if id := q["upload_id"]; id != "" {
		if e := uploadChunk(r, q); e != nil {
			gg.f.refuse(w, e)
			return
		}
		if !gg.g.owns(w, r, uploadSessionKey(id), fileNotFound) {
			return
		}
	} else if e := gg.uploadStart(r, q); e != nil {
		gg.f.refuse(w, e)
		return
	}
	gg.created(w, r, func(h http.Header, b []byte) string {
		if id := sessionOf(h.Get("X-Goog-Upload-Url")); id != "" {
			return uploadSessionKey(id)
		}
		var f struct {
			File json.RawMessage `json:"file"`
		}
		json.Unmarshal(b, &f)
		return nameOf(f.File)
	})
}

// uploadQuery returns the parameters of an upload's query by name, the
// name as Google's front end reads it (a system parameter's leading $
// dropped, any case), and refuses one given twice: which of two a front
// end acts on (a session's upload_id, the protocol) is not the proxy's to
// guess. The upload's own headers are refused twice likewise.
func uploadQuery(r *http.Request) (map[string]string, *refusal) {
	q := map[string]string{}
	for k, v := range r.URL.Query() {
		name := systemParam(k)
		if _, twice := q[name]; twice || len(v) != 1 {
			return nil, uploadRefusal("give the query parameter " + k + " once")
		}
		q[name] = v[0]
	}
	for _, h := range []string{"X-Goog-Upload-Protocol", "X-Goog-Upload-Command"} {
		if len(r.Header.Values(h)) > 1 {
			return nil, uploadRefusal("send " + h + " once")
		}
	}
	return q, nil
}

// onlyResumable reports whether each protocol r names (its query q
// included: its header, uploadType, upload_protocol) is the resumable one.
func onlyResumable(r *http.Request, q map[string]string) bool {
	said := []string{q["uploadtype"], q["upload_protocol"]}
	if h, ok := r.Header["X-Goog-Upload-Protocol"]; ok {
		said = append(said, h[0])
	}
	for _, p := range said {
		if p != "" && !strings.EqualFold(p, "resumable") {
			return false
		}
	}
	return true
}

// uploadChunk refuses a request to a session (its query q names one) that
// is not a chunk of it: by the resumable protocol (if it names one), its
// commands among upload, finalize, query and cancel. A start or a
// multipart upload sent there would pass what uploadStart refuses.
func uploadChunk(r *http.Request, q map[string]string) *refusal {
	for _, c := range strings.Split(r.Header.Get("X-Goog-Upload-Command"), ",") {
		switch strings.ToLower(strings.TrimSpace(c)) {
		case "upload", "finalize", "query", "cancel":
		default:
			return uploadRefusal("send a session's chunks with X-Goog-Upload-Command upload, finalize, query or cancel, as the SDKs do")
		}
	}
	if !onlyResumable(r, q) {
		return uploadRefusal("send a session's chunks by the resumable protocol, as the SDKs do")
	}
	return nil
}

// uploadStart checks, and puts back, the body of r, an upload that is no
// chunk of a session: it must begin a resumable upload (the protocol the
// SDKs speak, whose start is a JSON body the proxy reads), and leave the
// file's name to the API. A name the client chose would tell it, by the
// upstream's conflict, which names other clients' files have, and, made
// again after a delete, would be another file under a name a batch was
// checked by. Metadata in single quotes, as Google's REST samples send
// it, goes on in double quotes (jsonmember.Requote): as it was checked.
func (gg geminiGate) uploadStart(r *http.Request, q map[string]string) *refusal {
	if !onlyResumable(r, q) || !strings.EqualFold(r.Header.Get("X-Goog-Upload-Protocol"), "resumable") ||
		!strings.EqualFold(r.Header.Get("X-Goog-Upload-Command"), "start") {
		return uploadRefusal("begin it as a resumable upload (X-Goog-Upload-Protocol: resumable, X-Goog-Upload-Command: start), as the SDKs do")
	}
	body, e := gg.f.s.bodies.read(r)
	if e != nil {
		return refusalOf(e)
	}
	if len(bytes.TrimSpace(body)) > 0 { // (a start without metadata is one)
		if strict, ok := jsonmember.Requote(body); ok {
			body = strict
		}
		if e := uncheckable(r, body); e != nil {
			return e
		}
		names, _ := memberStrings(body, []string{"file"}, []string{"name"})
		if slices.ContainsFunc(names, func(n string) bool { return n != "" }) {
			return &refusal{status: http.StatusBadRequest, typ: "invalid_request_error",
				msg: "This llmfleet holds one key for all its clients: let the API name the file (give it a displayName instead of a name)."}
		}
	}
	putBack(r, body)
	return nil
}

// uploadRefusal is the refusal of an upload the proxy cannot check; what
// says what to do instead.
func uploadRefusal(what string) *refusal {
	return &refusal{status: http.StatusBadRequest, typ: "invalid_request_error",
		msg: "This llmfleet holds one key for all its clients and checks each upload: " + what + "."}
}

// uploadSessionKey is the name a resumable upload's session (its
// upload_id) is owned by: none of the API's objects is named so.
func uploadSessionKey(id string) string { return "upload_id/" + id }

// sessionOf returns the upload_id of a resumable upload's session URL
// (X-Goog-Upload-Url), "" if it names none.
func sessionOf(u string) string {
	if u == "" {
		return ""
	}
	p, err := url.Parse(u)
	if err != nil {
		return ""
	}
	return p.Query().Get("upload_id")
}
