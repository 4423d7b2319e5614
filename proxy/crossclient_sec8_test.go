package proxy_test

import (
	"net/http"
	"strings"
	"testing"
)

// Every path under /upload/v1beta/files/ is "owned" (geminiFace.owned),
// and serveOwned sent every /upload/ path to gg.upload, which passed the
// call upstream whatever its method and whatever object its path named,
// with no owner check (now: only a POST to /upload/v1beta/files goes on): only the (/v1beta|/download/v1beta)/files/{name}
// forms go through gg.one. ka's GET and DELETE of
// /upload/v1beta/files/victim (kb's file), and its GET of
// /upload/v1beta/files (the unfiltered list), reach the upstream under
// the shared key. The fake takes an /upload/ path that is no upload as
// the API path it prefixes, as a front end that strips the media prefix
// would (unverified for Google's front end: the discovery document binds
// /upload/v1beta/files to files.create's media upload only; what it does
// with GET/DELETE there is not documented). Independently of that, the
// proxy passes to the shared key a call on another client's object name
// without asking its owner: the same gap the 405 on owned lists closed.
func TestHeldGeminiUploadPathOfAnothersFile(t *testing.T) {
	ts, calls := heldServer(t, func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		if r.Method == http.MethodPost && p == "/upload/v1beta/files" {
			answerJSON(w, `{"file":{"name":"files/victim","displayName":"`+victimSecret+`","uri":"https://generativelanguage.googleapis.com/v1beta/files/victim","state":"ACTIVE"}}`)
			return
		}
		p = strings.TrimPrefix(p, "/upload")
		switch {
		case r.Method == http.MethodGet && p == "/v1beta/files":
			answerJSON(w, `{"files":[{"name":"files/victim","displayName":"`+victimSecret+`"}]}`)
		case r.Method == http.MethodGet && p == "/v1beta/files/victim":
			answerJSON(w, `{"name":"files/victim","displayName":"`+victimSecret+`"}`)
		case r.Method == http.MethodDelete && p == "/v1beta/files/victim":
			answerJSON(w, `{}`)
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	})
	if code, b := heldCall(t, ts, "POST", "kb", "/gemini/upload/v1beta/files", `{"file":{"displayName":"payroll"}}`); code != 200 {
		t.Fatalf("kb's upload: %d %s", code, b)
	}
	if code, _ := heldCall(t, ts, "GET", "ka", "/gemini/v1beta/files/victim", ""); code != 404 {
		t.Fatalf("control: ka's GET /v1beta/files/victim: %d, want 404", code)
	}
	for _, c := range []struct{ method, path string }{
		{"GET", "/gemini/upload/v1beta/files/victim"},
		{"GET", "/gemini/upload/v1beta/files"},
		{"DELETE", "/gemini/upload/v1beta/files/victim"},
	} {
		before := len(calls())
		code, b := heldCall(t, ts, c.method, "ka", c.path, "")
		if sent := calls()[before:]; len(sent) != 0 || strings.Contains(b, victimSecret) {
			t.Errorf("ka's %s %s: %d %s; passed upstream under the shared key: %q", c.method, c.path, code, b, sent)
		}
	}
}

// countTokens and embedContent pass through under the shared key once
// their body is checked for the files it names (geminiFace.refs: members
// named fileUri/file_uri); the check needs the body only to be valid JSON
// (uncheckable), and the request's Content-Type was never looked at
// (now: a body not sent as application/json, or with a $ct parameter, is
// refused, 415).
// Google's front end also reads a body as JSPB (Content-Type:
// application/json+protobuf, or the $ct system parameter
// https://cloud.google.com/apis/docs/system-parameters "$ct: Content-Type
// override"): a JSON array whose positions are the proto's field numbers,
// no member names at all. A fileData part naming kb's file in that form
// has no "fileUri" member to find. (Unverified: that
// generativelanguage.googleapis.com takes application/json+protobuf; the
// array layout follows google.ai.generativelanguage.v1beta
// CountTokensRequest{model=1, contents=2}, Content{parts=1, role=2},
// Part{file_data=6}, FileData{mime_type=1, file_uri=2}.)
func TestHeldGeminiJSPBBodyNamesAnothersFile(t *testing.T) {
	ts, calls := heldServer(t, func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/upload/") {
			geminiUp()(w, r)
			return
		}
		answerJSON(w, `{"totalTokens":48213}`)
	})
	heldCall(t, ts, "POST", "kb", "/gemini/upload/v1beta/files", `{"file":{"displayName":"payroll"}}`)
	const uri = "https://generativelanguage.googleapis.com/v1beta/files/victim"
	// Control: the JSON form is refused.
	if code, b := heldCall(t, ts, "POST", "ka", "/gemini/v1beta/models/gemini-2.5-flash:countTokens",
		`{"contents":[{"role":"user","parts":[{"fileData":{"mimeType":"text/plain","fileUri":"`+uri+`"}}]}]}`); code != 404 {
		t.Fatalf("control: %d %s", code, b)
	}
	jspb := `["models/gemini-2.5-flash",[[[[null,null,null,null,null,["text/plain","` + uri + `"]]],"user"]]]`
	for _, c := range []struct{ path, query, ctype string }{
		{":countTokens", "", "application/json+protobuf"},
		{":countTokens", "?%24ct=application/json%2Bprotobuf", "application/json"},
		{":embedContent", "", "application/json+protobuf"},
	} {
		before := len(calls())
		code, b := heldCall(t, ts, "POST", "ka", "/gemini/v1beta/models/gemini-2.5-flash"+c.path+c.query, jspb, "Content-Type", c.ctype)
		var leaked []string
		for _, s := range calls()[before:] {
			if strings.Contains(s, "victim") {
				leaked = append(leaked, s)
			}
		}
		// Refused as a body that cannot be checked (415), nothing sent.
		if code != http.StatusUnsupportedMediaType || strings.Contains(b, "48213") || len(leaked) != 0 {
			t.Errorf("JSPB %s%s (%s) naming kb's file: ka got %d %s; upstream got %q", c.path, c.query, c.ctype, code, b, leaked)
		}
	}
}
