package proxy

import (
	"bufio"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
)

// FuzzParseBudget checks the budget of header llmfleet-latency-budget-ms
// and of the path prefix /budget/<ms>/: a non-negative integer number of
// milliseconds, white space around it allowed, that does not overflow.
func FuzzParseBudget(f *testing.F) {
	for _, s := range []string{"0", "600000", " 15 ", "-1", "1.5", "", "9223372036854775807", "4611686018427", "+7", "0x10", "1e3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		d, err := parseBudget(v)
		ms, perr := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		ok := perr == nil && ms >= 0 && ms <= int64(1<<62/time.Millisecond)
		if ok != (err == nil) {
			t.Fatalf("parseBudget(%q) = %v, %v", v, d, err)
		}
		if ok && d != time.Duration(ms)*time.Millisecond {
			t.Fatalf("parseBudget(%q) = %v, want %d ms", v, d, ms)
		}
		if d < 0 {
			t.Fatalf("parseBudget(%q) = %v: negative", v, d)
		}
	})
}

// roundTripFunc is an http.RoundTripper.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// FuzzBudgetPath sends GET requests to the proxy, through a stub
// upstream, and checks the paths that go upstream: doubled slashes are
// folded, a /budget/<ms>/ prefix is taken off (and had a valid budget),
// and the rest of the path, escapes included, is kept as it was.
func FuzzBudgetPath(f *testing.F) {
	for _, s := range []string{
		"/budget/600000/v1/models", "/budget/600000//v1/models?x=1", "/budget/5/v1/files/a%2Fb",
		"/budget/1%30/v1/files/a%2Fb", "/budget/-1/v1/models", "/budget//v1/models", "/budget/5",
		"/budget/5/v1/x%20y/../z", "/v1/models", "//v1//models", "/budget/5//v1/files/a%2Fb", "//v1/files/a%2F/b",
	} {
		f.Add(s)
	}
	var upstreamURL *url.URL
	up, _ := url.Parse("http://upstream.test")
	s := &Server{Upstream: up, Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		upstreamURL = r.URL
		return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
	})}
	h := s.Handler()
	f.Fuzz(func(t *testing.T, target string) {
		if strings.ContainsAny(target, " \t\r\n") {
			return
		}
		r, err := http.ReadRequest(bufio.NewReader(strings.NewReader("GET " + target + " HTTP/1.1\r\nHost: proxy.test\r\n\r\n")))
		if err != nil {
			return
		}
		upstreamURL = nil
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		io.Copy(io.Discard, w.Result().Body)
		if upstreamURL == nil {
			return
		}
		in := r.URL.EscapedPath()
		for strings.Contains(in, "//") {
			in = strings.ReplaceAll(in, "//", "/")
		}
		want := in
		if rest, ok := strings.CutPrefix(in, "/budget/"); ok {
			ms, rest, _ := strings.Cut(rest, "/")
			msText, _ := url.PathUnescape(ms)
			if _, err := parseBudget(msText); err != nil {
				t.Fatalf("%s went upstream (%s) with the invalid budget %q", target, upstreamURL, msText)
			}
			want = "/" + rest
		}
		if got, want := upstreamURL.EscapedPath(), escaped(want); got != want {
			t.Fatalf("%s went upstream as %s, want %s", target, got, want)
		}
	})
}

// escaped returns the escaped form of the escaped path p as net/url
// normalises it.
func escaped(p string) string {
	u := url.URL{RawPath: p}
	u.Path, _ = url.PathUnescape(p)
	return u.EscapedPath()
}

// preferenceNames returns the preference names of Prefer header values,
// per RFC 7240: comma-separated preferences, each a token, an optional
// "=" value and ";" parameters, where values may be quoted strings.
func preferenceNames(values []string) []string {
	var names []string
	for _, v := range values {
		start, inQuote, inName := 0, false, true
		for i := 0; i <= len(v); i++ {
			c := byte(',')
			if i < len(v) {
				c = v[i]
			}
			switch {
			case inQuote && c == '\\':
				i++
			case c == '"':
				inQuote = !inQuote
			case inQuote:
			case c == ',':
				if inName {
					names = append(names, strings.TrimSpace(v[start:i]))
				}
				start, inName = i+1, true
			case inName && (c == '=' || c == ';'):
				names = append(names, strings.TrimSpace(v[start:i]))
				inName = false
			}
		}
	}
	return names
}

// FuzzPrefersAsync checks the reading of Prefer header values (one per
// line of the input) against preferenceNames.
func FuzzPrefersAsync(f *testing.F) {
	for _, s := range []string{
		"respond-async", "respond-async, wait=10", "return=minimal; foo=\"bar, baz\"", "wait=5\nRespond-Async",
		"handling=lenient, respond-async; x=1", "foo=\"a,respond-async;b\"", "respond-asynchronous", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		values := strings.Split(in, "\n")
		h := http.Header{"Prefer": values}
		want := false
		for _, n := range preferenceNames(values) {
			want = want || strings.EqualFold(n, "respond-async")
		}
		if got := prefersAsync(h); got != want {
			t.Fatalf("prefersAsync(%q) = %v, want %v", values, got, want)
		}
	})
}
