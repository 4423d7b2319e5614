package proxy

import (
	"bufio"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/llmfleet/llmfleet"
)

// pathSeeds are paths with dot segments in every disguise, and paths
// without any.
var pathSeeds = []string{
	"/v1/models/%2e%2e/messages/batches/msgbatch_alice", "/openai/v1/models/%2e%2e/files/file-alice/content",
	"/v1/models/%2E%2e/files", "/v1/models/.%2E/x", "/v1/models/%252e%252e/x", "/v1/models/%25252e./x",
	"/v1/models%2f..%2fmessages/batches", "/v1/models%2F%2e%2e%2Ffiles", "/v1/models/x%5c..%5cfiles", `/v1/models/x\..\files`,
	"/v1/models/..;x/files", "/v1/models/.", "/v1/models/%2e", "/budget/5/v1/models/%2e%2e/files",
	"/llmfleet/v1/requests/%2e%2e/x", "/openai/v1/models/%2e%2e%2f%2e%2e%2fv1%2ffiles",
	"/v1/models", "/v1/models/claude-x", "/v1/models/a.b", "/v1/models/...", "/v1/models/.x", "/v1/models/%2e%2ex",
	"/v1/models/%zz", "/v1/models/%2", "/openai/v1/models/gpt-4.1", "/v1/models/a%3f/b", "//v1//models/x",
}

// hexEscape matches one percent-escape.
var hexEscape = regexp.MustCompile(`%[0-9a-fA-F]{2}`)

// decodingsOf returns p and each of its percent-decodings, each decoding
// the one before, up to the first that changes nothing (at most limit).
func decodingsOf(p string, limit int) []string {
	out := []string{p}
	for len(out) < limit {
		d := hexEscape.ReplaceAllStringFunc(out[len(out)-1], func(e string) string {
			n, _ := strconv.ParseUint(e[1:], 16, 8)
			return string([]byte{byte(n)})
		})
		if d == out[len(out)-1] {
			break
		}
		out = append(out, d)
	}
	return out
}

// removeDotSegments is RFC 3986, section 5.2.4, step by step.
func removeDotSegments(in string) string {
	var out []string // output segments, each with its leading "/" if any
	for in != "" {
		switch {
		case strings.HasPrefix(in, "../"):
			in = in[3:]
		case strings.HasPrefix(in, "./"):
			in = in[2:]
		case strings.HasPrefix(in, "/./"):
			in = in[2:]
		case in == "/.":
			in = "/"
		case strings.HasPrefix(in, "/../"):
			in = in[3:]
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
		case in == "/..":
			in = "/"
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
		case in == "." || in == "..":
			in = ""
		default:
			i := strings.IndexByte(in[1:], '/') + 1
			if i == 0 {
				i = len(in)
			}
			out, in = append(out, in[:i]), in[i:]
		}
	}
	return strings.Join(out, "")
}

// cutSegments cuts every segment of p at the first of the bytes in at.
func cutSegments(p, at string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		if j := strings.IndexAny(s, at); j >= 0 {
			segs[i] = s[:j]
		}
	}
	return strings.Join(segs, "/")
}

// resolvesElsewhere reports whether p, read as a server may read it
// (backslashes as slashes; whole, or every segment up to its ";"
// parameters, or to a "?" or "#", where a server that parses a decoded
// path again ends it), names another path once its dot segments are
// removed.
func resolvesElsewhere(p string) bool {
	p = strings.ReplaceAll(p, `\`, "/")
	for _, v := range []string{p, cutSegments(p, ";?#")} {
		if removeDotSegments(v) != v {
			return true
		}
	}
	return false
}

// ownerFiltered are the lists that go upstream under the shared key in
// proxy-held-key mode to be filtered by owner before they are answered.
var ownerFiltered = map[string]bool{"/v1/messages/batches": true, "/v1/files": true, "/v1/batches": true}

// FuzzPathCheck checks hasDotSegment against decodingsOf and
// removeDotSegments: a path is admitted exactly when none of its
// decodings resolves to another path (and it has few enough decodings).
// It then sends the path through a Server in proxy-held-key mode on both
// faces, over a stub upstream, and checks that what reaches upstream was
// admitted and that every decoding of the path sent, resolved, is still
// under /v1/models, the only pass-through a shared key allows for GET, or
// is one of the lists answered filtered by owner.
func FuzzPathCheck(f *testing.F) {
	for _, s := range pathSeeds {
		f.Add(s)
	}
	var sent *url.URL
	stub := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		sent = r.URL
		return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
	})
	up, _ := url.Parse("http://upstream.test")
	held := func(llmfleet.Credential) (llmfleet.Credential, bool) {
		return llmfleet.Credential{AuthToken: "sk-shared"}, true
	}
	h := (&Server{Upstream: up, OpenAIUpstream: up, Transport: stub, Credentials: held, OpenAICredentials: held}).Handler()
	f.Fuzz(func(t *testing.T, p string) {
		levels := decodingsOf(p, maxPathDecodings+2)
		elsewhere := len(levels) > maxPathDecodings+1
		for _, l := range levels {
			elsewhere = elsewhere || resolvesElsewhere(l)
		}
		if got := hasDotSegment(p); got != elsewhere {
			t.Fatalf("hasDotSegment(%q) = %v; its decodings %q", p, got, levels)
		}
		for _, prefix := range []string{"", "/openai"} {
			target := prefix + p
			if strings.ContainsAny(target, " \t\r\n") || !strings.HasPrefix(target, "/") {
				return
			}
			r, err := http.ReadRequest(bufio.NewReader(strings.NewReader("GET " + target + " HTTP/1.1\r\nHost: proxy.test\r\nX-Api-Key: k\r\n\r\n")))
			if err != nil {
				return
			}
			sent = nil
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			io.Copy(io.Discard, w.Result().Body)
			if sent == nil {
				continue
			}
			if hasDotSegment(r.URL.EscapedPath()) {
				t.Fatalf("%s went upstream as %s: it has a dot segment", target, sent)
			}
			for _, l := range decodingsOf(sent.EscapedPath(), 100) {
				l = strings.ReplaceAll(l, `\`, "/")
				if i := strings.IndexAny(l, "?#"); i >= 0 {
					l = l[:i]
				}
				// An escape after /v1/models is checked at the next level.
				if l = removeDotSegments(l); l != "/v1/models" && !strings.HasPrefix(l, "/v1/models/") && !strings.HasPrefix(l, "/v1/models%") && !ownerFiltered[l] {
					t.Fatalf("%s went upstream under the shared key as %s, which resolves to %s", target, sent.EscapedPath(), l)
				}
			}
		}
	})
}
