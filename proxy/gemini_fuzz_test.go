package proxy

import (
	"strings"
	"testing"
)

// FuzzGeminiList: a Gemini list page, whatever its bytes, is read or
// refused without a panic, and a page read keeps every object given.
func FuzzGeminiList(f *testing.F) {
	f.Add([]byte(`{"operations":[{"name":"batches/a"},{"name":"batches/b"}],"nextPageToken":"t"}`), "operations")
	f.Add([]byte(`{"files":[{"name":"files/a"}]}`), "files")
	f.Add([]byte(`{}`), "files")
	f.Add([]byte(`{"files":null,"nextPageToken":3}`), "files")
	f.Fuzz(func(t *testing.T, body []byte, member string) {
		l, err := readGeminiList(body, member)
		if err != nil {
			return
		}
		for _, it := range l.items {
			nameOf(it) // any object, named or not
		}
	})
}

// FuzzGeminiTap: the usage of a sync answer, JSON or a stream cut
// anywhere, is read without a panic, and a read usage is never negative.
func FuzzGeminiTap(f *testing.F) {
	f.Add([]byte(`{"candidates":[],"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":2,"serviceTier":"flex"},"modelVersion":"m"}`), false)
	f.Add([]byte("data: {\"usageMetadata\":{\"promptTokenCount\":3}}\r\n\r\ndata: {\"modelVersion\":\"m\"}\r\n\r\n"), true)
	f.Add([]byte("data: {\"usageMetadata\":{\"cachedContentTokenCount\":9,\"promptTokenCount\":3}}"), true)
	f.Fuzz(func(t *testing.T, body []byte, sse bool) {
		tap := &geminiTap{sse: sse}
		for len(body) > 0 {
			n := min(len(body), 7)
			tap.Write(body[:n])
			body = body[n:]
		}
		a := tap.answer()
		u := a.Usage
		if u.InputTokens < 0 || u.OutputTokens < 0 || u.CacheReadInputTokens < 0 {
			t.Errorf("negative usage %+v", u)
		}
	})
}

// FuzzGeminiRouted: a path is routed only if it is a versioned (v1beta,
// or v1: the @google/genai SDK's default) generateContent or
// streamGenerateContent of one model.
func FuzzGeminiRouted(f *testing.F) {
	for _, p := range []string{"/v1beta/models/m:generateContent", "/v1beta/models/m:streamGenerateContent",
		"/v1beta/models/a/b:generateContent", "/models/m:generateContent", "/v1beta/models/:generateContent", "/v1beta/batches",
		"/v1/models/m:generateContent", "/v2/models/m:generateContent"} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, path string) {
		if !(geminiFace{}).routed("POST", path) {
			return
		}
		model, method, _ := geminiMethod(path)
		if model == "" || strings.Contains(model, "/") || (method != "generateContent" && method != "streamGenerateContent") ||
			!strings.HasPrefix(path, "/v1beta/models/") && !strings.HasPrefix(path, "/v1/models/") {
			t.Errorf("routed %q: model %q, method %q", path, model, method)
		}
	})
}

// TestGeminiFaceSaysEveryRefusal: the Gemini face words every refusal
// kind the pipeline and the owner gate give, with an error status, a
// canonical status and a message.
func TestGeminiFaceSaysEveryRefusal(t *testing.T) {
	f := geminiFace{s: &Server{}}
	for k := stateFailed; k <= notShared; k++ {
		if e := f.says(k, "x"); e == nil || e.status < 400 || e.typ == "" || e.msg == "" {
			t.Errorf("kind %d: %+v", k, e)
		}
	}
}
