package openaiemu

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
)

// MaxBatchLines is the most requests one batch input file may hold.
const MaxBatchLines = 50_000

// batchLine is one parsed line of an input file.
type batchLine struct {
	CustomID string          `json:"custom_id"`
	Method   string          `json:"method"`
	URL      string          `json:"url"`
	Body     json.RawMessage `json:"body"`
}

// modelOfBody reads a request body's model.
func modelOfBody(body []byte) string {
	var m struct {
		Model string `json:"model"`
	}
	_ = json.Unmarshal(body, &m)
	return m.Model
}

// parseBatchFile reads an input file and checks it as the API does: each
// line a JSON object with a custom_id unique in the file, method POST, the
// batch's endpoint as url, a body naming the same model as every other.
func parseBatchFile(content []byte, endpoint string) ([]batchLine, []batchError) {
	var lines []batchLine
	var errs []batchError
	fail := func(n int, code, param, msg string) {
		line := n
		e := batchError{Code: code, Message: msg, Line: &line}
		if param != "" {
			e.Param = &param
		}
		errs = append(errs, e)
	}
	ids := map[string]bool{}
	model := ""
	sc := bufio.NewScanner(bytes.NewReader(content))
	sc.Buffer(make([]byte, 64<<10), MaxBatchFileBytes)
	n := 0
	for sc.Scan() {
		n++
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		var l batchLine
		if err := json.Unmarshal(text, &l); err != nil || l.CustomID == "" || len(l.Body) == 0 || l.Body[0] != '{' {
			fail(n, "invalid_json_line", "", "This line is not parseable as valid JSON, or lacks custom_id or body.")
			continue
		}
		switch m := modelOfBody(l.Body); {
		case ids[l.CustomID]:
			fail(n, "duplicate_custom_id", "custom_id", "The custom_id for this request is a duplicate of another request. The custom_id parameter must be unique for each request in a batch.")
		case l.Method != http.MethodPost:
			fail(n, "invalid_method", "method", "Only POST is supported as the method.")
		case l.URL != endpoint:
			fail(n, "invalid_url", "url", "The URL provided for this request does not match the batch endpoint.")
		case m == "":
			fail(n, "missing_required_parameter", "body.model", "Each request must name a model.")
		case model != "" && m != model:
			fail(n, "mismatched_model", "body.model", "The provided model does not match the model of the other requests in the file: a batch holds one model.")
		default:
			model = m
		}
		ids[l.CustomID] = true
		lines = append(lines, l)
	}
	if err := sc.Err(); err != nil {
		fail(n+1, "invalid_json_line", "", "The file could not be read: "+err.Error())
	}
	switch {
	case len(lines) == 0 && len(errs) == 0:
		errs = append(errs, batchError{Code: "empty_file", Message: "The input file is empty."})
	case len(lines) > MaxBatchLines:
		errs = append(errs, batchError{Code: "too_many_requests", Message: fmt.Sprintf("A batch holds at most %d requests.", MaxBatchLines)})
	}
	return lines, errs
}
