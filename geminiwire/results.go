package geminiwire

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/llmfleet/llmfleet"
)

// rpcNames are the canonical statuses by their google.rpc.Code number,
// which the error of an operation or of a batched request carries
// (google.rpc.Status: code and message, no status name).
var rpcNames = [...]string{1: StatusCancelled, 2: "UNKNOWN", 3: StatusInvalidArgument, 4: StatusDeadlineExceeded,
	5: StatusNotFound, 6: "ALREADY_EXISTS", 7: StatusPermissionDenied, 8: StatusResourceExhausted,
	9: StatusFailedPrecondition, 10: "ABORTED", 11: "OUT_OF_RANGE", 12: "UNIMPLEMENTED", 13: StatusInternal,
	14: StatusUnavailable, 15: "DATA_LOSS", 16: StatusUnauthenticated}

// RPCCode returns the google.rpc.Code number of a canonical status (13,
// INTERNAL, for one unknown).
func RPCCode(status string) int {
	for i, n := range rpcNames {
		if n == status && i > 0 {
			return i
		}
	}
	return 13
}

// RPCStatus returns the google.rpc.Status of an error inside an operation
// or a batch: the canonical code number and the message.
func RPCStatus(status, msg string) *Status {
	return &Status{Code: RPCCode(status), Message: msg}
}

// Name returns the canonical status of s: its status member, else the
// name of its code read as a google.rpc.Code, else the status of its code
// read as an HTTP status.
func (s *Status) Name() string {
	switch {
	case s.Status != "":
		return s.Status
	case s.Code > 0 && s.Code < len(rpcNames):
		return rpcNames[s.Code]
	}
	return StatusOf(s.Code)
}

// Err returns the error of a batched request as the synchronous API
// would have answered it: the HTTP status of its canonical status, and
// Google's envelope.
func (s *Status) Err() *llmfleet.Error {
	name := s.Name()
	code := HTTPStatus(name)
	msg := s.Message
	if msg == "" {
		msg = "The request failed inside its batch."
	}
	body, _ := json.Marshal(struct {
		Error Status `json:"error"`
	}{Status{Code: code, Message: msg, Status: name, Details: s.Details}})
	return &llmfleet.Error{StatusCode: code, Type: name, Message: msg, Body: body}
}

// Result maps one answer of a batch onto llmfleet's: a response
// succeeded; an error CANCELLED is a canceled request, DEADLINE_EXCEEDED
// in an expired batch an expired one, any other errored.
func Result(key string, response json.RawMessage, e *Status, expired bool) llmfleet.BatchResult {
	r := llmfleet.BatchResult{CustomID: key}
	switch {
	case e == nil && len(response) > 0:
		r.Type, r.Message = llmfleet.ResultSucceeded, response
		if a, err := ReadAnswer(response); err == nil {
			r.Usage, r.Model = a.Usage, a.Model
		}
	case e != nil && e.Name() == StatusCancelled:
		r.Type = llmfleet.ResultCanceled
	case e != nil && expired && e.Name() == StatusDeadlineExceeded:
		r.Type = llmfleet.ResultExpired
	default:
		if e == nil {
			e = &Status{Status: StatusInternal, Message: "The batch answered the request with neither a response nor an error."}
		}
		r.Type, r.Error = llmfleet.ResultErrored, e.Err()
	}
	return r
}

// KeyOf reads our key from an inlined request's metadata ({"key": ...}).
func KeyOf(metadata json.RawMessage) string {
	var m struct {
		Key string `json:"key"`
	}
	_ = json.Unmarshal(metadata, &m)
	return m.Key
}

// KeyMetadata returns the metadata an inlined request carries our key in.
func KeyMetadata(key string) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"key": key})
	return b
}

// ReadResultLines parses a responses file, one ResultLine per line, into
// results (see Result); expired tells whether the batch expired. A line
// without a key, or not a JSON object, stops the read with an error.
func ReadResultLines(r io.Reader, expired bool, fn func(llmfleet.BatchResult) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		var l ResultLine
		if err := json.Unmarshal(text, &l); err != nil || l.Key == "" {
			return fmt.Errorf("geminiwire: malformed result line %.80q", text)
		}
		if err := fn(Result(l.Key, l.Response, l.Error, expired)); err != nil {
			return err
		}
	}
	return sc.Err()
}

// ReadInlined gives fn the results of an inline batch's output, keyed by
// each request's metadata; an answer without a key is an error.
func ReadInlined(out []InlinedResponse, expired bool, fn func(llmfleet.BatchResult) error) error {
	for i, ir := range out {
		key := KeyOf(ir.Metadata)
		if key == "" {
			return fmt.Errorf("geminiwire: inlined response %d carries no key in its metadata", i)
		}
		if err := fn(Result(key, ir.Response, ir.Error, expired)); err != nil {
			return err
		}
	}
	return nil
}
