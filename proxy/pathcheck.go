package proxy

import (
	"net/http"
	"strings"
)

// This file refuses request paths with dot segments. The proxy decides
// what may go upstream by a request's path (the allow-lists of
// proxy-held-key mode, the owner checks of batches and files), and a dot
// segment makes a path name something other than what it reads as once
// a server resolves it: /v1/models/%2e%2e/files/x is /v1/files/x to any
// hop that decodes and resolves it. No path of the APIs the proxy fronts
// has a dot segment, so such a request is refused before anything else
// looks at it, whatever the mode and the face.

// maxPathDecodings bounds the percent-decodings of a path the check
// follows: a path still changing after that many is refused, as no
// client sends one (and following it further would cost time in its
// length squared).
const maxPathDecodings = 4

// hasDotSegment reports whether the escaped path p has a dot segment in
// any of its decodings: as it came, and once more at every
// percent-decoding while a decoding changes it (%252e is %2e once
// decoded, "." twice). At every stage a slash or a backslash separates
// segments, so that an escaped one (%2f, %5c) splits a segment once
// decoded, and a segment is its name before any ";" parameters (as some
// servers read "..;x") and before a "?" or "#" (which a server that
// parses a decoded path again reads as the end of the path: "..%23" is
// ".." to it). A segment is a dot segment if that name is "." or "..".
// A path that a decoding still changes after maxPathDecodings of them
// counts as having one.
func hasDotSegment(p string) bool {
	for range maxPathDecodings + 1 {
		if dotSegmentIn(p) {
			return true
		}
		d := percentDecode(p)
		if d == p {
			return false
		}
		p = d
	}
	return true
}

// dotSegmentIn reports whether p, split at every slash and backslash, has
// a segment whose name (before any ";", "?" or "#") is "." or "..".
func dotSegmentIn(p string) bool {
	for p != "" {
		i := strings.IndexAny(p, `/\`)
		seg := p
		if i >= 0 {
			seg, p = p[:i], p[i+1:]
		} else {
			p = ""
		}
		name := seg
		if j := strings.IndexAny(seg, ";?#"); j >= 0 {
			name = seg[:j]
		}
		if name == "." || name == ".." {
			return true
		}
	}
	return false
}

// percentDecode decodes every %XX escape of s (X a hex digit, either
// case) and leaves any other "%" as it is, as a lenient server would.
func percentDecode(s string) string {
	i := strings.IndexByte(s, '%')
	if i < 0 {
		return s
	}
	b := make([]byte, 0, len(s))
	b = append(b, s[:i]...)
	for ; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			b = append(b, unhex(s[i+1])<<4|unhex(s[i+2]))
			i += 2
			continue
		}
		b = append(b, s[i])
	}
	return string(b)
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}

// dotSegmentMessage is the message of the answer to a path with a dot
// segment.
const dotSegmentMessage = `The request path has a "." or ".." segment (possibly percent-encoded, or next to an encoded slash or a backslash), ` +
	`which a server behind llmfleet could resolve to another resource, so llmfleet does not pass it on. ` +
	`Send the path with its dot segments resolved (no API path has one).`

// refuseDotSegments answers 400 invalid_request_error, in the envelope of
// the face the path is of, to a request whose path has a dot segment
// (hasDotSegment), and reports whether it did.
func (s *Server) refuseDotSegments(w http.ResponseWriter, r *http.Request) bool {
	if !hasDotSegment(r.URL.EscapedPath()) {
		return false
	}
	f, _ := s.faceAt(r.URL.Path)
	f.refuse(w, &refusal{status: http.StatusBadRequest, typ: "invalid_request_error", code: "invalid_path", msg: dotSegmentMessage})
	return true
}

// methodOverrides are the headers by which some front ends (Google's
// among them) take a request for one of another method.
var methodOverrides = []string{"X-Http-Method-Override", "X-Http-Method", "X-Method-Override"}

// overrideParam returns the query parameter of r by which Google's front
// end takes a request for one of another method (the system parameter
// $httpMethod, the query form of X-HTTP-Method-Override), if r has one.
func overrideParam(r *http.Request) (string, bool) {
	for k := range r.URL.Query() {
		if systemParam(k) == "httpmethod" {
			return k, true
		}
	}
	return "", false
}

// systemParam returns the name of a query parameter k as Google's front
// end may read it, a system parameter's: without a leading $, in lower
// case ($httpMethod, httpmethod; $ct, ct).
func systemParam(k string) string { return strings.ToLower(strings.TrimPrefix(k, "$")) }

// refuseMethodOverride refuses, with proxy-held keys, a request that asks
// (by a header, or by the query parameter $httpMethod) to be taken for
// one of another method: what the proxy checks by a
// request's method (a list filtered by owner is a GET) must be what the
// upstream does.
func (s *Server) refuseMethodOverride(w http.ResponseWriter, r *http.Request) bool {
	if s.Credentials == nil {
		return false
	}
	name, ok := overrideParam(r)
	for _, h := range methodOverrides {
		if _, has := r.Header[h]; has && !ok {
			name, ok = h, true
		}
	}
	if ok {
		f, _ := s.faceAt(r.URL.Path)
		f.refuse(w, &refusal{status: http.StatusBadRequest, typ: "invalid_request_error",
			msg: "This llmfleet holds one key for all its clients and checks each request by its method: send it with its own method, without " + name + "."})
	}
	return ok
}

// methodRefusal refuses, with proxy-held keys, a method of a list of
// objects kept by owner that the proxy does not serve (its GET lists the
// client's own, its POST creates one), rather than pass it upstream
// unfiltered.
func methodRefusal(r *http.Request) *refusal {
	return &refusal{status: http.StatusMethodNotAllowed, typ: "invalid_request_error",
		msg: "Method " + r.Method + " is not allowed on " + r.URL.Path + "."}
}
