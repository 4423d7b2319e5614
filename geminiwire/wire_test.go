package geminiwire

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
)

// answerBody is a GenerateContentResponse as the API gives it, thinking
// and cached content included.
const answerBody = `{
  "candidates": [{"content": {"role": "model", "parts": [{"text": "thinking...", "thought": true}, {"text": "Paris is the capital."}]},
    "finishReason": "STOP", "index": 0}],
  "usageMetadata": {"promptTokenCount": 120, "candidatesTokenCount": 5, "thoughtsTokenCount": 30,
    "cachedContentTokenCount": 100, "totalTokenCount": 155, "serviceTier": "flex"},
  "modelVersion": "gemini-2.5-flash", "responseId": "resp-1"
}`

func TestReadAnswer(t *testing.T) {
	a, err := ReadAnswer([]byte(answerBody))
	want := Answer{Model: "gemini-2.5-flash", Tier: llmfleet.TierFlex,
		Usage: llmfleet.Usage{InputTokens: 20, CacheReadInputTokens: 100, OutputTokens: 35}}
	if err != nil || a != want {
		t.Errorf("ReadAnswer = %+v, %v; want %+v", a, err, want)
	}
	var r GenerateContentResponse
	json.Unmarshal([]byte(answerBody), &r)
	if r.Text() != "Paris is the capital." {
		t.Errorf("Text %q", r.Text())
	}
	for in, want := range map[string]llmfleet.Tier{"": "", "FLEX": llmfleet.TierFlex, "standard": llmfleet.TierStandard,
		"priority": llmfleet.TierPriority, "unspecified": llmfleet.TierStandard} {
		if got := TierOf(in); got != want {
			t.Errorf("TierOf(%q) = %q, want %q", in, got, want)
		}
	}
	if (*UsageMetadata)(nil).Usage() != (llmfleet.Usage{}) {
		t.Error("nil usage")
	}
}

func TestRequestKey(t *testing.T) {
	if k := RequestKey(http.Header{"X-Goog-Api-Key": {"h"}}, url.Values{"key": {"q"}}); k != "h" {
		t.Errorf("header first: %q", k)
	}
	if k := RequestKey(nil, url.Values{"key": {"q"}}); k != "q" {
		t.Errorf("query: %q", k)
	}
}

func TestSplitMethod(t *testing.T) {
	for in, want := range map[string][2]string{
		"/v1beta/models/gemini-2.5-flash:generateContent": {"gemini-2.5-flash", "generateContent"},
		"/models/gemini-2.5-pro:streamGenerateContent":    {"gemini-2.5-pro", "streamGenerateContent"},
		"/v1beta/models/x/y:generateContent":              {},
		"/v1beta/batches/b1":                              {},
		"/v1beta/models/gemini-2.5-flash":                 {},
		"/v1/models/gemini-2.5-flash:generateContent":     {"gemini-2.5-flash", "generateContent"},
		"/v1x/models/gemini-2.5-flash:generateContent":    {},
	} {
		m, meth, ok := SplitMethod(in)
		if ok != (want[0] != "") || m != want[0] || meth != want[1] {
			t.Errorf("SplitMethod(%q) = %q %q %v", in, m, meth, ok)
		}
	}
}

// TestErrors: the envelope, RetryInfo, and the flex refusals told apart.
func TestErrors(t *testing.T) {
	shed := Envelope(429, "Resource has been exhausted (e.g. check quota).", RetryInfo(48*time.Second))
	s, ok := ParseError(shed)
	if !ok || s.Code != 429 || s.Status != StatusResourceExhausted {
		t.Fatalf("ParseError = %+v, %v", s, ok)
	}
	if d, ok := s.RetryDelay(); !ok || d != 48*time.Second {
		t.Errorf("RetryDelay = %v, %v", d, ok)
	}
	pe := ErrorOf(429, shed, nil, true)
	if !errors.Is(pe, llmfleet.ErrFlexUnavailable) || pe.Type != StatusResourceExhausted || pe.RetryAfter != 48*time.Second {
		t.Errorf("flex 429: %+v", pe)
	}
	if pe := ErrorOf(429, shed, nil, false); pe.Reason != nil {
		t.Errorf("standard 429 classified %v", pe.Reason)
	}
	unavailable := Envelope(503, "The model is overloaded. Please try again later.")
	if pe := ErrorOf(503, unavailable, http.Header{"Retry-After": {"7"}}, true); !errors.Is(pe, llmfleet.ErrFlexUnavailable) ||
		pe.Type != StatusUnavailable || pe.RetryAfter != 7*time.Second {
		t.Errorf("flex 503: %+v", pe)
	}
	noFlex := Envelope(400, "Flex service_tier is not supported for this model.")
	if pe := ErrorOf(400, noFlex, nil, true); !errors.Is(pe, llmfleet.ErrFlexUnsupported) {
		t.Errorf("flex 400: %+v", pe)
	}
	if pe := ErrorOf(502, []byte("<html>bad gateway</html>"), nil, false); pe.Type != StatusInternal || pe.Message == "" {
		t.Errorf("not an envelope: %+v", pe)
	}
	for _, st := range []string{StatusInvalidArgument, StatusUnauthenticated, StatusPermissionDenied, StatusNotFound,
		StatusResourceExhausted, StatusInternal, StatusUnavailable, StatusDeadlineExceeded, StatusCancelled} {
		if got := StatusOf(HTTPStatus(st)); got != st {
			t.Errorf("StatusOf(HTTPStatus(%s)) = %s", st, got)
		}
		if got := (&Status{Code: RPCCode(st)}).Name(); got != st {
			t.Errorf("rpc code of %s reads as %s", st, got)
		}
	}
	for in, want := range map[string]time.Duration{"48s": 48 * time.Second, "0.5s": 500 * time.Millisecond, "1.000000001s": time.Second + 1} {
		if d, ok := ParseDuration(in); !ok || d != want {
			t.Errorf("ParseDuration(%q) = %v %v", in, d, ok)
		}
	}
	for _, bad := range []string{"", "s", "48", "-1s", "NaNs", "1e300s"} {
		if _, ok := ParseDuration(bad); ok {
			t.Errorf("ParseDuration(%q) accepted", bad)
		}
	}
}

// TestBatchShapes: counts are strings, the operation reads as recorded.
func TestBatchShapes(t *testing.T) {
	const op = `{"name": "batches/abc", "metadata": {"@type": "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatch",
	  "model": "models/gemini-2.5-flash", "displayName": "lfb_1", "createTime": "2026-08-01T10:00:00.123456Z",
	  "updateTime": "2026-08-01T10:00:00.123456Z", "batchStats": {"requestCount": "2", "pendingRequestCount": "2"},
	  "state": "BATCH_STATE_PENDING", "name": "batches/abc"}}`
	var o Operation
	if err := json.Unmarshal([]byte(op), &o); err != nil {
		t.Fatal(err)
	}
	if o.Metadata.BatchStats.RequestCount != 2 || o.Metadata.BatchStats.PendingRequestCount != 2 || o.Done || Ended(o.Metadata.State) {
		t.Errorf("operation %+v", o.Metadata)
	}
	b, _ := json.Marshal(BatchStats{RequestCount: 3, SuccessfulRequestCount: 1})
	if string(b) != `{"requestCount":"3","successfulRequestCount":"1"}` {
		t.Errorf("stats written %s", b)
	}
}

func TestResults(t *testing.T) {
	lines := `{"key":"t-0","response":` + strings.ReplaceAll(answerBody, "\n", "") + `}
{"key":"t-1","error":{"code":3,"message":"contents is not specified"}}
{"key":"t-2","error":{"code":1,"message":"cancelled"}}

{"key":"t-3","error":{"code":4,"message":"expired"}}
`
	var got []llmfleet.BatchResult
	err := ReadResultLines(strings.NewReader(lines), true, func(r llmfleet.BatchResult) error { got = append(got, r); return nil })
	if err != nil || len(got) != 4 {
		t.Fatalf("%d results, %v", len(got), err)
	}
	if got[0].Type != llmfleet.ResultSucceeded || got[0].Model != "gemini-2.5-flash" || got[0].Usage.OutputTokens != 35 {
		t.Errorf("succeeded %+v", got[0])
	}
	if got[1].Type != llmfleet.ResultErrored || got[1].Error.StatusCode != 400 || got[1].Error.Type != StatusInvalidArgument {
		t.Errorf("errored %+v", got[1])
	}
	if got[2].Type != llmfleet.ResultCanceled || got[3].Type != llmfleet.ResultExpired {
		t.Errorf("canceled %+v, expired %+v", got[2], got[3])
	}
	if s, ok := ParseError(got[1].Error.Body); !ok || s.Status != StatusInvalidArgument || s.Code != 400 {
		t.Errorf("errored body %s", got[1].Error.Body)
	}
	if err := ReadResultLines(strings.NewReader(`{"response":{}}`), false, func(llmfleet.BatchResult) error { return nil }); err == nil {
		t.Error("a line without a key")
	}
	in := []InlinedResponse{{Response: json.RawMessage(answerBody), Metadata: KeyMetadata("k-1")}, {Metadata: json.RawMessage(`{}`)}}
	n := 0
	err = ReadInlined(in, false, func(r llmfleet.BatchResult) error { n++; return nil })
	if n != 1 || err == nil {
		t.Errorf("inlined: %d results, %v", n, err)
	}
}

// TestStreamRoundTrip: a response streamed by AppendStream reads back to
// its text, finish reason, usage and tier.
func TestStreamRoundTrip(t *testing.T) {
	out, err := AppendStream(nil, []byte(strings.Replace(answerBody, `{"text": "thinking...", "thought": true}, `, "", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasSuffix(out, []byte("\r\n\r\n")) || bytes.Count(out, []byte("data: ")) != 4 {
		t.Errorf("stream %q", out)
	}
	s, err := ReadStream(bytes.NewReader(out), nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.Text != "Paris is the capital." || s.FinishReason != "STOP" || s.Model != "gemini-2.5-flash" || s.ResponseID != "resp-1" ||
		s.Usage.OutputTokens != 35 || s.Tier != llmfleet.TierFlex || s.Chunks != 4 {
		t.Errorf("streamed %+v", s)
	}
	// With a thought the answer goes as one chunk, whole.
	out, _ = AppendStream(nil, []byte(answerBody))
	if s, err := ReadStream(bytes.NewReader(out), nil); err != nil || s.Chunks != 1 || s.Text != "Paris is the capital." {
		t.Errorf("one chunk: %+v %v", s, err)
	}
	failed := "data: " + string(Envelope(503, "overloaded")) + "\r\n\r\n"
	if _, err := ReadStream(strings.NewReader(failed), nil); !errors.As(err, new(*llmfleet.Error)) {
		t.Errorf("error event: %v", err)
	}
}
