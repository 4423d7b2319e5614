package geminiwire

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/llmfleet/llmfleet"
)

// FuzzReadStream: any input either fails or sums chunks that were each a
// JSON object; a stream written by AppendStream always reads back.
func FuzzReadStream(f *testing.F) {
	f.Add([]byte("data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"hi\"}]}}]}\r\n\r\n"))
	f.Add([]byte("data: {\"error\":{\"code\":503,\"message\":\"x\",\"status\":\"UNAVAILABLE\"}}\n\n"))
	f.Add([]byte("data: [DONE]\n\ndata: {\"usageMetadata\":{\"promptTokenCount\":-3,\"cachedContentTokenCount\":9}}\n\n"))
	f.Add([]byte(answerBody))
	f.Fuzz(func(t *testing.T, in []byte) {
		s, err := ReadStream(bytes.NewReader(in), func(GenerateContentResponse) error { return nil })
		if err == nil && (s.Usage.InputTokens < 0 || s.Usage.CacheReadInputTokens < 0 || s.Usage.OutputTokens < 0) {
			t.Fatalf("negative usage %+v of %q", s.Usage, in)
		}
		out, err := AppendStream(nil, in)
		if err != nil {
			return
		}
		if _, err := ReadStream(bytes.NewReader(out), nil); err != nil {
			t.Fatalf("AppendStream(%q) = %q does not read back: %v", in, out, err)
		}
	})
}

// FuzzParseError: an envelope parsed is classified without panic, and
// one written by Envelope parses back.
func FuzzParseError(f *testing.F) {
	f.Add(429, []byte(`{"error":{"code":429,"message":"m","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"48s"}]}}`), "msg")
	f.Add(400, []byte(`{"error":{"code":"x"}}`), "service_tier")
	f.Add(503, []byte(`{"error":null}`), "")
	f.Fuzz(func(t *testing.T, code int, body []byte, msg string) {
		pe := ErrorOf(code, body, nil, true)
		if pe.Type == "" || pe.StatusCode != code || pe.RetryAfter < 0 {
			t.Fatalf("ErrorOf(%d, %q) = %+v", code, body, pe)
		}
		if !utf8.ValidString(msg) {
			return
		}
		env := Envelope(code, msg)
		s, ok := ParseError(env)
		if !ok || s.Code != code || s.Message != msg {
			t.Fatalf("Envelope(%d, %q) = %s reads as %+v, %v", code, msg, env, s, ok)
		}
	})
}

// FuzzReadResultLines: every line read is a result of a known type with
// its key; an errored one carries an error with a status.
func FuzzReadResultLines(f *testing.F) {
	f.Add([]byte(`{"key":"a","response":{"usageMetadata":{"promptTokenCount":1}}}`+"\n"+`{"key":"b","error":{"code":3}}`), false)
	f.Add([]byte(`{"key":"a"}`), true)
	f.Add([]byte(`{"key":"a","error":{"code":99,"status":""}}`), true)
	f.Fuzz(func(t *testing.T, in []byte, expired bool) {
		_ = ReadResultLines(bytes.NewReader(in), expired, func(r llmfleet.BatchResult) error {
			switch {
			case r.CustomID == "":
				t.Fatalf("a result without its key from %q", in)
			case r.Type == llmfleet.ResultErrored && (r.Error == nil || r.Error.StatusCode < 400 || !json.Valid(r.Error.Body)):
				t.Fatalf("errored result %+v from %q", r.Error, in)
			case r.Type == llmfleet.ResultSucceeded && len(r.Message) == 0:
				t.Fatalf("succeeded without a message from %q", in)
			}
			return nil
		})
	})
}

// FuzzOperation: any batch operation decodes or fails without panic, and
// one decoded encodes and decodes to the same.
func FuzzOperation(f *testing.F) {
	f.Add([]byte(`{"name":"batches/a","metadata":{"batchStats":{"requestCount":"2"},"state":"BATCH_STATE_RUNNING"},"done":false}`))
	f.Add([]byte(`{"name":"batches/a","done":true,"response":{"inlinedResponses":{"inlinedResponses":[{"metadata":{"key":"k"},"error":{"code":1}}]}}}`))
	f.Add([]byte(`{"metadata":{"batchStats":{"requestCount":7}}}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		var o Operation
		if json.Unmarshal(in, &o) != nil {
			return
		}
		b, err := json.Marshal(o)
		if err != nil {
			t.Fatalf("re-encoding %q: %v", in, err)
		}
		var o2 Operation
		if err := json.Unmarshal(b, &o2); err != nil {
			t.Fatalf("%s does not decode: %v", b, err)
		}
	})
}
