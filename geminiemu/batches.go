package geminiemu

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/llmfleet/llmfleet/geminiwire"
	"github.com/llmfleet/llmfleet/internal/httprec"
	"github.com/llmfleet/llmfleet/jsonmember"
)

// DefaultBatchTurnaround is how long a batch takes when
// Server.BatchTurnaround is 0.
const DefaultBatchTurnaround = 2 * time.Second

// batchRequest is one request of a batch: the request body and what
// identifies it, the inline metadata or the file line's key.
type batchRequest struct {
	request  json.RawMessage
	metadata json.RawMessage
	key      string
}

// batch is a batch job.
type batch struct {
	id, owner, model, displayName string
	seq                           int
	file                          bool // input was a file: answers go to a responses file
	requests                      []batchRequest
	created, pendingUntil, ends   time.Time
	updated, ended                time.Time
	state                         string
	cancel                        bool
	stats                         geminiwire.BatchStats
	output                        *geminiwire.BatchOutput
	finishing                     bool // answers being made, the lock let go
}

// createBatch serves POST /v1beta/models/{model}:batchGenerateContent.
func (s *Server) createBatch(w http.ResponseWriter, r *http.Request, model string) {
	body := readBody(w, r)
	if body == nil {
		return
	}
	if k := unknownMember(body, []string{"batch"}); k != "" {
		writeError(w, http.StatusBadRequest, `Invalid JSON payload received. Unknown name "`+k+`": Cannot find field.`)
		return
	}
	var req geminiwire.CreateBatchRequest
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, http.StatusBadRequest, "Invalid JSON payload received. "+err.Error())
		return
	}
	in := req.Batch.InputConfig
	switch {
	case req.Batch.DisplayName == "":
		writeError(w, http.StatusBadRequest, "* GenerateContentBatch.display_name: display_name is required\n")
		return
	case in == nil || (in.Requests == nil) == (in.FileName == ""):
		writeError(w, http.StatusBadRequest, "* GenerateContentBatch.input_config: exactly one of requests and file_name must be set\n")
		return
	case in.Requests != nil && len(body) > geminiwire.MaxInlineBytes:
		writeError(w, http.StatusBadRequest, "Request payload size exceeds the limit: 20971520 bytes.")
		return
	}
	key := apiKey(r)
	b := &batch{owner: key, model: model, displayName: req.Batch.DisplayName, file: in.FileName != ""}
	if b.file {
		reqs, code, msg := s.fileRequests(key, in.FileName)
		if code != 0 {
			writeError(w, code, msg)
			return
		}
		b.requests = reqs
	} else {
		for _, ir := range in.Requests.Requests {
			b.requests = append(b.requests, batchRequest{request: ir.Request, metadata: ir.Metadata})
		}
	}
	if len(b.requests) == 0 {
		writeError(w, http.StatusBadRequest, "* GenerateContentBatch.input_config: the batch holds no request\n")
		return
	}
	late := s.lateBy(b.displayName)
	s.mu.Lock()
	now := s.now().Add(late)
	s.seq++
	b.seq, b.id = s.seq, "b"+strconv.Itoa(s.seq)+hashed(key, now.String())[:14]
	turnaround := s.BatchTurnaround
	if turnaround <= 0 {
		turnaround = DefaultBatchTurnaround
	}
	b.created, b.updated, b.pendingUntil, b.ends = now, now, now.Add(s.BatchPending), now.Add(turnaround)
	b.state = geminiwire.BatchPending
	b.stats = geminiwire.BatchStats{RequestCount: geminiwire.Count(len(b.requests)), PendingRequestCount: geminiwire.Count(len(b.requests))}
	if s.batches == nil {
		s.batches = map[string]*batch{}
	}
	s.batches[b.id] = b
	op := b.operation()
	s.mu.Unlock()
	if late > 0 {
		dropConnection(w) // processed; the batch lands late
		return
	}
	writeJSON(w, http.StatusOK, op)
}

// fileRequests reads the lines of the key's input file name.
func (s *Server) fileRequests(key, name string) ([]batchRequest, int, string) {
	s.mu.Lock()
	f := s.files[strings.TrimPrefix(name, "files/")]
	s.mu.Unlock()
	if f == nil || f.owner != key {
		return nil, http.StatusForbidden, "You do not have permission to access the File " + name + " or it may not exist."
	}
	var out []batchRequest
	sc := bufio.NewScanner(bytes.NewReader(f.content))
	sc.Buffer(make([]byte, 64<<10), len(f.content)+1)
	for n := 1; sc.Scan(); n++ {
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		var l geminiwire.FileLine
		if err := json.Unmarshal(text, &l); err != nil || l.Key == "" || len(l.Request) == 0 || l.Request[0] != '{' {
			return nil, http.StatusBadRequest, "Invalid line " + strconv.Itoa(n) + " in " + name + ": each line must be a JSON object with a key and a request."
		}
		out = append(out, batchRequest{request: l.Request, key: l.Key})
	}
	return out, 0, ""
}

// viewLocked brings a batch's state up to now and returns its operation.
func (s *Server) viewLocked(b *batch, now time.Time) geminiwire.Operation {
	if b.finishing || geminiwire.Ended(b.state) {
		return b.operation()
	}
	expiry := b.created.Add(geminiwire.Expiry)
	switch {
	case b.cancel:
		s.finishLocked(b, now, geminiwire.BatchCancelled)
	case !now.Before(expiry) && !b.ends.Before(expiry):
		s.finishLocked(b, expiry, geminiwire.BatchExpired)
	case !now.Before(b.ends):
		s.finishLocked(b, b.ends, geminiwire.BatchSucceeded)
	case !now.Before(b.pendingUntil) && b.state == geminiwire.BatchPending:
		b.state, b.updated = geminiwire.BatchRunning, b.pendingUntil
	}
	return b.operation()
}

// finishLocked ends a batch at end in state: every request answered when
// it succeeded, the share its elapsed time reached when it was cancelled
// or expired (the others get a CANCELLED or DEADLINE_EXCEEDED error).
func (s *Server) finishLocked(b *batch, end time.Time, state string) {
	b.finishing = true
	defer func() { b.finishing = false }()
	done := len(b.requests)
	if state != geminiwire.BatchSucceeded {
		if span := b.ends.Sub(b.created); span > 0 {
			done = int(float64(len(b.requests)) * float64(end.Sub(b.created)) / float64(span))
		}
		done = min(max(done, 0), len(b.requests))
	}
	answers := make([]geminiwire.InlinedResponse, len(b.requests))
	var ok, failed int
	for i, br := range b.requests {
		a := &answers[i]
		a.Metadata = br.metadata
		switch {
		case i >= done && state == geminiwire.BatchExpired:
			a.Error = geminiwire.RPCStatus(geminiwire.StatusDeadlineExceeded, "The batch expired before the request ran.")
		case i >= done:
			a.Error = geminiwire.RPCStatus(geminiwire.StatusCancelled, "The batch was cancelled before the request ran.")
		default:
			a.Response, a.Error = s.answerLocked(b, br.request)
		}
		if a.Error != nil {
			failed++
		} else {
			ok++
		}
	}
	out := &geminiwire.BatchOutput{Type: geminiwire.TypeBatchOutput}
	if b.file {
		out.ResponsesFile = s.responsesFileLocked(b, answers, end)
	} else {
		out.InlinedResponses = &struct {
			InlinedResponses []geminiwire.InlinedResponse `json:"inlinedResponses"`
		}{answers}
	}
	b.output, b.state, b.ended, b.updated = out, state, end, end
	b.stats.SuccessfulRequestCount, b.stats.FailedRequestCount, b.stats.PendingRequestCount = geminiwire.Count(ok), geminiwire.Count(failed), 0
}

// answerLocked answers one request of a batch by the generateContent
// handler, as the batch's owner, in the standard tier; s.mu is let go
// meanwhile.
func (s *Server) answerLocked(b *batch, request json.RawMessage) (json.RawMessage, *geminiwire.Status) {
	s.mu.Unlock()
	defer s.mu.Lock()
	body, err := jsonmember.Delete(request, "serviceTier")
	if err != nil {
		return nil, geminiwire.RPCStatus(geminiwire.StatusInvalidArgument, "Invalid JSON payload received: the request is not a JSON object.")
	}
	path := "/v1beta/models/" + b.model + ":" + geminiwire.MethodGenerate
	r, _ := http.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	r.Header.Set("X-Goog-Api-Key", b.owner)
	r.SetPathValue("method", b.model+":"+geminiwire.MethodGenerate)
	rec := &httprec.Recorder{}
	s.faulty(s.modelMethod)(rec, r)
	if rec.Status() == http.StatusOK {
		return rec.Body(), nil
	}
	st, ok := geminiwire.ParseError(rec.Body())
	if !ok {
		return nil, geminiwire.RPCStatus(geminiwire.StatusInternal, "Internal error encountered.")
	}
	return nil, geminiwire.RPCStatus(st.Name(), st.Message)
}

// responsesFileLocked stores a file batch's answers as its responses file
// and returns the file's name.
func (s *Server) responsesFileLocked(b *batch, answers []geminiwire.InlinedResponse, at time.Time) string {
	var buf bytes.Buffer
	for i, a := range answers {
		line, _ := json.Marshal(geminiwire.ResultLine{Key: b.requests[i].key, Response: a.Response, Error: a.Error})
		buf.Write(line)
		buf.WriteByte('\n')
	}
	f := &file{id: "batch" + b.id, owner: b.owner, displayName: b.displayName + " responses", mimeType: "application/jsonl",
		created: at, content: buf.Bytes(), source: "GENERATED"}
	s.addFileLocked(f)
	return "files/" + f.id
}

// operation returns the batch as the API shows it.
func (b *batch) operation() geminiwire.Operation {
	created, updated := b.created, b.updated
	stats := b.stats
	meta := &geminiwire.Batch{Type: geminiwire.TypeBatch, Name: "batches/" + b.id, Model: geminiwire.ModelPath(b.model),
		DisplayName: b.displayName, CreateTime: &created, UpdateTime: &updated, BatchStats: &stats, State: b.state}
	op := geminiwire.Operation{Name: meta.Name, Metadata: meta}
	if geminiwire.Ended(b.state) {
		ended := b.ended
		meta.EndTime, meta.Output = &ended, b.output
		op.Done, op.Response = true, b.output
	}
	return op
}
