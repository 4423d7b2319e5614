package claude

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"time"
	"unicode/utf8"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/claudewire"
)

// readAllResults runs readResults on data, read at once or byte by byte.
func readAllResults(data []byte, bytewise bool) ([]llmfleet.BatchResult, error) {
	var got []llmfleet.BatchResult
	r := bytes.NewReader(data)
	var err error
	fn := func(res llmfleet.BatchResult) error { got = append(got, res); return nil }
	if bytewise {
		err = readResults(iotest.OneByteReader(r), map[string]bool{}, fn)
	} else {
		err = readResults(r, map[string]bool{}, fn)
	}
	return got, err
}

// FuzzReadResults checks the results JSONL reader: it delivers each
// custom_id once, as its line says, the same whatever the reads, and
// fails only on a line that is not a result.
func FuzzReadResults(f *testing.F) {
	f.Add([]byte(resultsJSONL))
	f.Add([]byte(resultsJSONL[:len(resultsJSONL)/2]))
	f.Add([]byte("{\"custom_id\":\"a\",\"result\":{\"type\":\"succeeded\"}}\r\n\n{\"custom_id\":\"a\"}\n"))
	f.Add([]byte(`{"custom_id":"","result":{}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := readAllResults(data, false)
		got1, err1 := readAllResults(data, true)
		if !reflect.DeepEqual(got, got1) || (err == nil) != (err1 == nil) {
			t.Fatalf("%q: at once %v, %v; byte by byte %v, %v", data, got, err, got1, err1)
		}
		seen := map[string]bool{}
		for _, res := range got {
			if res.CustomID == "" || seen[res.CustomID] {
				t.Fatalf("%q: custom_id %q empty or delivered twice", data, res.CustomID)
			}
			seen[res.CustomID] = true
			if res.Type == llmfleet.ResultErrored &&
				(res.Error == nil || res.Error.Type == "" || res.Error.StatusCode != claudewire.StatusForType(res.Error.Type)) {
				t.Fatalf("%q: errored result %q with error %+v", data, res.CustomID, res.Error)
			}
		}
		if err != nil {
			return
		}
		for _, line := range bytes.Split(data, []byte("\n")) {
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			var l resultLine
			if json.Unmarshal(line, &l) != nil || !seen[l.CustomID] {
				t.Fatalf("%q: line %q passed over without an error", data, line)
			}
		}
	})
}

// FuzzParseError checks the reading of an error answer: whatever the
// body, an Error with the status, a type and a message, valid UTF-8 if
// the body was, and a non-negative retry delay.
func FuzzParseError(f *testing.F) {
	f.Add(529, []byte(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_1"}`), "", "")
	f.Add(502, []byte("<html>Bad Gateway</html>"), "", "3")
	f.Add(400, []byte(strings.Repeat("é", 300)), "1500", "")
	f.Add(400, []byte("a"+strings.Repeat("é", 300)), "", "")
	f.Add(429, []byte(`{"error":{"type":""}}`), "", "Wed, 21 Oct 2015 07:28:00 GMT")
	f.Add(500, []byte(""), "NaN", "1e300")
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, status int, body []byte, retryMs, retry string) {
		h := http.Header{}
		if retryMs != "" {
			h.Set("Retry-After-Ms", retryMs)
		}
		if retry != "" {
			h.Set("Retry-After", retry)
		}
		e := parseError(status, h, body, now)
		if e.StatusCode != status || e.Type == "" || !bytes.Equal(e.Body, body) {
			t.Fatalf("parseError(%d, %q) = %+v", status, body, e)
		}
		if utf8.Valid(body) && !utf8.ValidString(e.Message) {
			t.Fatalf("parseError(%d, %q): message %q is not valid UTF-8", status, body, e.Message)
		}
		if e.RetryAfter < 0 {
			t.Fatalf("parseError: retry after %v", e.RetryAfter)
		}
		checkDelay := func(name, v string, unit time.Duration) {
			d, ok := retryAfter(http.Header{name: {v}}, now)
			if d < 0 {
				t.Fatalf("%s: %q gives %v", name, v, d)
			}
			x, err := strconv.ParseFloat(v, 64)
			if err != nil && !errors.Is(err, strconv.ErrRange) {
				return
			}
			switch {
			case math.IsNaN(x):
				if ok {
					t.Fatalf("%s: %q gives %v: NaN is no delay", name, v, d)
				}
			case x*float64(unit) >= float64(time.Hour):
				if !ok || d < time.Hour {
					t.Fatalf("%s: %q gives %v, want an hour or more", name, v, d)
				}
			}
		}
		checkDelay("Retry-After-Ms", retryMs, time.Millisecond)
		checkDelay("Retry-After", retry, time.Second)
	})
}

// FuzzReadMessage checks that reassembling a stream never panics, and
// gives a Message object with its content when it succeeds.
func FuzzReadMessage(f *testing.F) {
	f.Add([]byte(exampleStream))
	f.Add([]byte(exampleStream[:len(exampleStream)/3]))
	f.Add([]byte("data: {\"type\":\"message_start\",\"message\":{}}\n\ndata: {\"type\":\"content_block_delta\",\"index\":0}\n\ndata: {\"type\":\"message_stop\"}\n\n"))
	f.Fuzz(func(t *testing.T, stream []byte) {
		raw, err := ReadMessage(bytes.NewReader(stream))
		if err != nil {
			return
		}
		var m struct {
			Content []json.RawMessage `json:"content"`
		}
		if json.Unmarshal(raw, &m) != nil || m.Content == nil {
			t.Fatalf("ReadMessage(%q) = %s", stream, raw)
		}
	})
}
