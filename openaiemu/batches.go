package openaiemu

import (
	"fmt"
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

// batchEndpoints are the endpoints a batch may name.
var batchEndpoints = []string{"/v1/responses", "/v1/chat/completions", "/v1/embeddings", "/v1/completions",
	"/v1/moderations", "/v1/images/generations", "/v1/images/edits", "/v1/videos"}

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
