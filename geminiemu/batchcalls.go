package geminiemu

import (
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/llmfleet/llmfleet/geminiwire"
)

// notFound is Google's message for an entity that is not there.
const notFound = "Requested entity was not found."

// batchOf returns the caller's batch id, brought up to now, or answers
// 404 (a batch of another key is not there for the caller).
func (s *Server) batchOf(w http.ResponseWriter, r *http.Request, id string) (*batch, geminiwire.Operation, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, now := s.batches[id], s.now()
	if b == nil || b.owner != apiKey(r) || !b.landed(now) {
		writeError(w, http.StatusNotFound, notFound)
		return nil, geminiwire.Operation{}, false
	}
	return b, s.viewLocked(b, now), true
}

// getBatch serves GET /v1beta/batches/{id}.
func (s *Server) getBatch(w http.ResponseWriter, r *http.Request) {
	if _, op, ok := s.batchOf(w, r, r.PathValue("id")); ok {
		s.countResults(op)
		writeJSON(w, http.StatusOK, op)
	}
}

// cancelBatch serves POST /v1beta/batches/{id}:cancel: the batch ends
// CANCELLED at the next look; an ended batch cannot be cancelled.
func (s *Server) cancelBatch(w http.ResponseWriter, r *http.Request) {
	id, ok := strings.CutSuffix(r.PathValue("id"), ":cancel")
	if !ok {
		writeError(w, http.StatusNotFound, "The requested URL "+r.URL.Path+" was not found on this server.")
		return
	}
	b, op, ok := s.batchOf(w, r, id)
	if !ok {
		return
	}
	if op.Done {
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		w.WriteHeader(http.StatusBadRequest)
		w.Write([]byte(`{"error":{"code":400,"message":"The batch is in a terminal state (` + op.Metadata.State + `) and cannot be cancelled.","status":"FAILED_PRECONDITION"}}`))
		return
	}
	s.mu.Lock()
	b.cancel = true
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, struct{}{})
}

// deleteBatch serves DELETE /v1beta/batches/{id}: the batch is gone (its
// processing stops).
func (s *Server) deleteBatch(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if _, _, ok := s.batchOf(w, r, id); !ok {
		return
	}
	s.mu.Lock()
	delete(s.batches, id)
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, struct{}{})
}

// listBatches serves GET /v1beta/batches: the caller's batches, newest
// first, pageSize of them (1 to 1000; default 50) after pageToken.
func (s *Server) listBatches(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	size := 50
	if v := q.Get("pageSize"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			writeError(w, http.StatusBadRequest, "Invalid value at 'page_size' ("+v+").")
			return
		}
		if n > 0 {
			size = min(n, 1000)
		}
	}
	key, now := apiKey(r), s.now()
	s.mu.Lock()
	var bs []*batch
	for _, b := range s.batches {
		if b.owner == key && b.landed(now) {
			bs = append(bs, b)
		}
	}
	slices.SortFunc(bs, func(a, b *batch) int {
		if c := b.created.Compare(a.created); c != 0 {
			return c
		}
		return b.seq - a.seq
	})
	start := 0
	if tok := q.Get("pageToken"); tok != "" {
		start = slices.IndexFunc(bs, func(b *batch) bool { return "after-"+b.id == tok }) + 1
		if start == 0 {
			s.mu.Unlock()
			writeError(w, http.StatusBadRequest, "Invalid page token.")
			return
		}
	}
	var out geminiwire.ListBatchesResponse
	for i := start; i < len(bs) && i < start+size; i++ {
		out.Operations = append(out.Operations, s.viewLocked(bs[i], now))
	}
	if start+size < len(bs) {
		out.NextPageToken = "after-" + bs[start+size-1].id
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, out)
}
