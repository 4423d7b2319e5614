package openaiemu

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/llmfleet/llmfleet/openaiwire"
)

// DefaultBatchTurnaround is how long a batch takes when
// Server.BatchTurnaround is 0.
const DefaultBatchTurnaround = 2 * time.Second

// MaxBatchLines is the most requests one batch input file may hold.
const MaxBatchLines = 50_000

// batchEndpoints are the endpoints a batch may name.
var batchEndpoints = []string{"/v1/responses", "/v1/chat/completions", "/v1/embeddings", "/v1/completions",
	"/v1/moderations", "/v1/images/generations", "/v1/images/edits", "/v1/videos"}

// batchLine is one parsed line of an input file.
type batchLine struct {
	CustomID string          `json:"custom_id"`
	Method   string          `json:"method"`
	URL      string          `json:"url"`
	Body     json.RawMessage `json:"body"`
}

// batch is a batch job.
type batch struct {
	obj      batchObject
	owner    string
	key      string // the owner's API key, to answer its lines
	project  string
	lines    []batchLine
	tokens   int // the input tokens it holds enqueued (word counts)
	created  time.Time
	seq      int       // order of creation, for batches created at one instant
	ends     time.Time // when it completes, unless canceled or expired first
	failures []batchError
	// finishing is set while its lines are being answered (the lock is
	// let go meanwhile): it is then finalizing, or cancelling, to others.
	finishing bool
}

// batchObject is the API's Batch; batchError an entry of its errors.
type (
	batchObject = openaiwire.Batch
	batchError  = openaiwire.BatchError
)

func unix(t time.Time) *int64 {
	v := t.Unix()
	return &v
}

func (s *Server) batchesLocked() map[string]*batch {
	if s.batches == nil {
		s.batches = map[string]*batch{}
	}
	return s.batches
}

// createBatch serves POST /v1/batches.
func (s *Server) createBatch(w http.ResponseWriter, r *http.Request) {
	var req struct {
		InputFileID      string            `json:"input_file_id"`
		Endpoint         string            `json:"endpoint"`
		CompletionWindow string            `json:"completion_window"`
		Metadata         map[string]string `json:"metadata"`
	}
	if !decode(w, r, &req) {
		return
	}
	switch {
	case !slices.Contains(batchEndpoints, req.Endpoint):
		writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_value", "endpoint", "Invalid value for 'endpoint': '"+req.Endpoint+"'.")
		return
	case req.CompletionWindow != "24h":
		writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_value", "completion_window", "Invalid value for 'completion_window': only '24h' is supported.")
		return
	case len(req.Metadata) > 16:
		writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_value", "metadata", "metadata may hold at most 16 pairs.")
		return
	}
	for k, v := range req.Metadata {
		if len(k) > 64 || len(v) > 512 {
			writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_value", "metadata", "metadata keys are at most 64 characters and values at most 512.")
			return
		}
	}
	me := owner(r)
	now := s.now()
	s.mu.Lock()
	f := s.filesLocked()[req.InputFileID]
	if f == nil || f.Owner != me {
		s.mu.Unlock()
		writeError(w, http.StatusNotFound, "invalid_request_error", "", "input_file_id", "No such File object: "+req.InputFileID)
		return
	}
	if f.Purpose != "batch" {
		s.mu.Unlock()
		writeError(w, http.StatusBadRequest, "invalid_request_error", "", "input_file_id", "The input file must have purpose 'batch'.")
		return
	}
	key, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	b := &batch{owner: me, key: key, project: r.Header.Get("OpenAI-Project"), created: now}
	b.obj = batchObject{ID: s.newIDLocked("batch_"), Object: "batch", Endpoint: req.Endpoint, InputFileID: f.ID,
		CompletionWindow: "24h", Status: "validating", CreatedAt: now.Unix(), ExpiresAt: unix(now.Add(24 * time.Hour)),
		Metadata: req.Metadata}
	b.seq = s.seq
	b.lines, b.failures = parseBatchFile(f.Content, req.Endpoint)
	if len(b.lines) > 0 {
		b.obj.Model = modelOfBody(b.lines[0].Body)
	}
	for _, l := range b.lines {
		b.tokens += words(string(l.Body))
	}
	if len(b.failures) == 0 && s.EnqueuedTokenLimit != nil {
		if limit := s.EnqueuedTokenLimit(b.obj.Model); limit > 0 && s.enqueuedLocked(me, b.obj.Model, now)+b.tokens > limit {
			b.failures = []batchError{{Code: "token_limit_exceeded", Message: fmt.Sprintf(
				"Enqueued token limit reached for %s in organization org-emulator. Limit: %d enqueued tokens. Please try again once some in_progress batches have been completed.", b.obj.Model, limit)}}
		}
	}
	turnaround := s.BatchTurnaround
	if turnaround <= 0 {
		turnaround = DefaultBatchTurnaround
	}
	b.ends = now.Add(turnaround)
	b.obj.RequestCounts.Total = len(b.lines)
	s.batchesLocked()[b.obj.ID] = b
	obj := b.obj
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, obj)
}

// enqueuedLocked returns the input tokens an owner has enqueued for a
// model in batches in progress.
func (s *Server) enqueuedLocked(owner, model string, now time.Time) int {
	n := 0
	for _, b := range s.batchesLocked() {
		if b.owner == owner && b.obj.Model == model && len(b.failures) == 0 && now.Before(b.ends) &&
			(b.obj.Status == "validating" || b.obj.Status == "in_progress") {
			n += b.tokens
		}
	}
	return n
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

// viewLocked brings a batch's status up to now: validating → failed, or
// in_progress → completed (its lines answered, output and error files
// written) at its end; cancelling → cancelled, and expired at 24 h, with
// the lines answered by then.
func (s *Server) viewLocked(b *batch, now time.Time) batchObject {
	o := &b.obj
	if b.finishing {
		return *o
	}
	if o.Status == "validating" {
		if len(b.failures) > 0 {
			o.Status, o.FailedAt, o.Errors = "failed", unix(b.created), &openaiwire.BatchErrors{Object: "list", Data: b.failures}
			return *o
		}
		o.Status, o.InProgressAt = "in_progress", unix(b.created)
	}
	switch {
	case o.Status == "cancelling":
		s.finishLocked(b, now, "cancelled")
	case o.Status == "in_progress" && !now.Before(b.ends) && b.ends.Before(b.created.Add(24*time.Hour)):
		s.finishLocked(b, b.ends, "completed")
	case o.Status == "in_progress" && !now.Before(b.created.Add(24*time.Hour)):
		s.finishLocked(b, b.created.Add(24*time.Hour), "expired")
	}
	return *o
}

// finishLocked answers the lines of a batch that ended at end with status:
// all of them when it completed, those it had reached by then when it
// was cancelled or expired (the rest are batch_cancelled or batch_expired
// lines of its error file). Output lines come shuffled.
func (s *Server) finishLocked(b *batch, end time.Time, status string) {
	o := &b.obj
	b.finishing = true
	defer func() { b.finishing = false }()
	if status == "completed" {
		o.Status, o.FinalizingAt = "finalizing", unix(end)
	}
	done := len(b.lines)
	if status != "completed" {
		span := b.ends.Sub(b.created)
		if span > 0 {
			done = int(float64(len(b.lines)) * float64(end.Sub(b.created)) / float64(span))
		}
		done = min(max(done, 0), len(b.lines))
	}
	var out, errs []string
	for i, l := range b.lines {
		reqID := "batch_req_" + hashID("", o.ID, l.CustomID)[:24]
		if i >= done {
			code, msg := "batch_cancelled", "This request was cancelled before it ran."
			if status == "expired" {
				code, msg = "batch_expired", "This request could not be executed before the completion window expired."
			}
			line, _ := json.Marshal(map[string]any{"id": reqID, "custom_id": l.CustomID, "response": nil,
				"error": map[string]string{"code": code, "message": msg}})
			errs = append(errs, string(line))
			o.RequestCounts.Failed++
			continue
		}
		status, body := s.answerLocked(b, l)
		line, _ := json.Marshal(map[string]any{"id": reqID, "custom_id": l.CustomID,
			"response": map[string]any{"status_code": status, "request_id": "req_" + hashID("", reqID)[:24], "body": json.RawMessage(body)},
			"error":    nil})
		if status != http.StatusOK {
			errs = append(errs, string(line))
			o.RequestCounts.Failed++
			continue
		}
		out = append(out, string(line))
		o.RequestCounts.Completed++
		if a, err := openaiwire.ReadAnswer(body); err == nil {
			u := &o.Usage
			u.InputTokens += int(a.Usage.InputTokens + a.Usage.CacheReadInputTokens)
			u.InputTokensDetails.CachedTokens += int(a.Usage.CacheReadInputTokens)
			u.OutputTokens += int(a.Usage.OutputTokens)
			u.TotalTokens = u.InputTokens + u.OutputTokens
		}
	}
	shuffle(out, o.ID)
	if len(out) > 0 {
		id := s.addFileLocked(b.owner, o.ID+"_output.jsonl", out, end)
		o.OutputFileID = &id
	}
	if len(errs) > 0 {
		id := s.addFileLocked(b.owner, o.ID+"_error.jsonl", errs, end)
		o.ErrorFileID = &id
	}
	at := unix(end)
	o.Status = status
	switch status {
	case "completed":
		o.CompletedAt = at
	case "cancelled":
		o.CancelledAt = at
	case "expired":
		o.ExpiredAt = at
	}
}

// addFileLocked stores lines as a batch_output file of owner.
func (s *Server) addFileLocked(owner, name string, lines []string, at time.Time) string {
	f := &file{ID: s.newIDLocked("file-"), Owner: owner, Filename: name, Purpose: "batch_output", CreatedAt: at,
		ExpiresAt: at.Add(30 * 24 * time.Hour), Content: []byte(strings.Join(lines, "\n") + "\n")}
	s.filesLocked()[f.ID] = f
	return f.ID
}

// answerLocked answers one line by its endpoint's own handler, as the
// batch's owner; s.mu is let go meanwhile (the handler counts), the batch
// being marked finishing.
func (s *Server) answerLocked(b *batch, l batchLine) (int, []byte) {
	s.mu.Unlock()
	defer s.mu.Lock()
	r, _ := http.NewRequest(http.MethodPost, l.URL, bytes.NewReader(l.Body))
	r.Header.Set("Authorization", "Bearer "+b.key)
	if b.project != "" {
		r.Header.Set("OpenAI-Project", b.project)
	}
	rec := &recorder{header: http.Header{}, status: http.StatusOK}
	s.answer(rec, r)
	return rec.status, rec.body.Bytes()
}

// recorder keeps what a handler answers.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
	wrote  bool
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) Write(b []byte) (int, error) {
	r.wrote = true
	return r.body.Write(b)
}
func (r *recorder) WriteHeader(code int) {
	if !r.wrote {
		r.status, r.wrote = code, true
	}
}

// shuffle reorders lines deterministically by seed: batch results come in
// any order.
func shuffle(lines []string, seed string) {
	key := func(s string) uint64 {
		h := fnv.New64a()
		h.Write([]byte(seed))
		h.Write([]byte(s))
		return h.Sum64()
	}
	slices.SortFunc(lines, func(a, b string) int {
		ka, kb := key(a), key(b)
		switch {
		case ka < kb:
			return -1
		case ka > kb:
			return 1
		}
		return 0
	})
}

// batchOf returns the caller's batch named in the path, brought up to
// now, or answers 404.
func (s *Server) batchOf(w http.ResponseWriter, r *http.Request) (*batch, batchObject, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.batchesLocked()[r.PathValue("id")]
	if b == nil || b.owner != owner(r) {
		writeError(w, http.StatusNotFound, "invalid_request_error", "", "batch_id", "No batch found with id '"+r.PathValue("id")+"'.")
		return nil, batchObject{}, false
	}
	return b, s.viewLocked(b, s.now()), true
}

func (s *Server) getBatch(w http.ResponseWriter, r *http.Request) {
	if _, o, ok := s.batchOf(w, r); ok {
		writeJSON(w, http.StatusOK, o)
	}
}

// cancelBatch serves POST /v1/batches/{id}/cancel: cancelling now,
// cancelled at the next look.
func (s *Server) cancelBatch(w http.ResponseWriter, r *http.Request) {
	b, o, ok := s.batchOf(w, r)
	if !ok {
		return
	}
	if o.Status != "validating" && o.Status != "in_progress" {
		writeError(w, http.StatusConflict, "invalid_request_error", "", "", "Cannot cancel a batch with status '"+o.Status+"'.")
		return
	}
	s.mu.Lock()
	b.obj.Status, b.obj.CancellingAt = "cancelling", unix(s.now())
	o = b.obj
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, o)
}

// listBatches serves GET /v1/batches (after, limit 1-100, default 20),
// newest first.
func (s *Server) listBatches(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit := 20
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			writeError(w, http.StatusBadRequest, "invalid_request_error", "", "limit", "limit must be between 1 and 100.")
			return
		}
		limit = n
	}
	me, now := owner(r), s.now()
	s.mu.Lock()
	var bs []*batch
	for _, b := range s.batchesLocked() {
		if b.owner == me {
			bs = append(bs, b)
		}
	}
	slices.SortFunc(bs, func(a, b *batch) int {
		if c := b.created.Compare(a.created); c != 0 {
			return c
		}
		return b.seq - a.seq
	})
	objs := make([]batchObject, 0, len(bs))
	for _, b := range bs {
		objs = append(objs, s.viewLocked(b, now))
	}
	s.mu.Unlock()
	writeList(w, page(objs, q.Get("after"), limit, func(o batchObject) string { return o.ID }))
}
