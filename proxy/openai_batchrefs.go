package proxy

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/llmfleet/llmfleet/jsonmember"
)

// This file keeps a client's batch from naming what another client made
// under the key they share (proxy-held-key mode): the batch's input file
// is read from the upstream before the batch is created, and each of its
// requests' bodies is checked as a routed call's is (openAIHeldRefs).

// checkInputFile reads the input file id of a batch of the gate's client
// and answers the refusal of the first of its requests that names what
// is not the client's (openAIHeldRefs), or a failure to read it. It
// reports whether the batch may go on.
func (f openAIFace) checkInputFile(w http.ResponseWriter, r *http.Request, g ownerGate, id string) bool {
	f.client = g.client
	return g.checkInputFile(w, r, id, "/v1/files/"+id+"/content", "",
		func(body []byte) *refusal { return openAIHeldRefs(f, r, body) }, "body")
}

// checkInputFile reads a batch's input file, name, from the upstream (at
// path?query) before the batch is created, and answers the refusal check
// gives the first of its requests (requestLines, each line's member
// named member), or a failure to read it: a batch that cannot be checked
// is not created. It reports whether the batch may go on.
func (g ownerGate) checkInputFile(w http.ResponseWriter, r *http.Request, name, path, query string,
	check func(request []byte) *refusal, member string) bool {
	res := serveInProcess(getOf(r.Context(), r, path, query), g.up.ServeHTTP)
	defer res.Body.Close() // (ends the copy of what is left, once checked)
	var e *refusal
	err := errors.New("the input file's content answered " + res.Status)
	if res.StatusCode == http.StatusOK {
		e, err = requestLines(res.Body, check, member)
	}
	switch {
	case err != nil:
		logStateError(g.book.log, r, "a batch's input file could not be read to check its requests", err)
		g.f.refuse(w, &refusal{status: http.StatusBadGateway, typ: "api_error",
			msg: "llmfleet could not read the batch's input file " + name + " to check that its requests name only your own objects; try again."})
		return false
	case e != nil:
		g.f.refuse(w, e)
		return false
	}
	return true
}

// requestLines returns the refusal check gives the first request of rd, a
// batch input file (JSON Lines), that it refuses, or the error reading
// rd. A line's request is its member named member (every one of that
// name, matched regardless of case as the faces' checks match keys), or,
// for member "", the line itself. A line that is no JSON object refuses
// the file, and a lone carriage return ends a line as a line feed does,
// so that no reader finds a request in it that was not checked.
func requestLines(rd io.Reader, check func(request []byte) *refusal, member string) (*refusal, error) {
	br := bufio.NewReader(rd)
	for n := 1; ; {
		chunk, err := br.ReadBytes('\n')
		for line := range bytes.SplitSeq(chunk, []byte{'\r'}) {
			if e := checkLine(line, check, member, n); e != nil {
				return e, nil
			}
		}
		n++
		if err == io.EOF {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// checkLine returns the refusal of line n of a batch input file
// (requestLines).
func checkLine(line []byte, check func(request []byte) *refusal, member string, n int) *refusal {
	if len(bytes.TrimSpace(line)) == 0 {
		return nil
	}
	ms, err := jsonmember.Members(line)
	if err != nil {
		return &refusal{status: http.StatusBadRequest, typ: "invalid_request_error",
			msg: "Line " + strconv.Itoa(n) + " of the batch's input file is not a JSON object: llmfleet checks what each request names, and cannot check it."}
	}
	if member == "" {
		return check(line)
	}
	for _, m := range ms {
		if strings.EqualFold(m.Key, member) {
			if e := check(m.Value(line)); e != nil {
				return e
			}
		}
	}
	return nil
}
