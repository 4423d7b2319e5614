package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// openAIOwned reports whether path (of the OpenAI API) is of its Files or
// Batches API: what a client makes there is its own in proxy-held-key
// mode, where every client's files and batches are made under the one
// upstream key.
func openAIOwned(path string) bool {
	for _, p := range []string{"/v1/files", "/v1/batches"} {
		if path == p || strings.HasPrefix(path, p+"/") {
			return true
		}
	}
	return false
}

// openAIShared reports whether a pass-through call may go upstream under
// a key every client shares: only reads of the models. Everything else
// the API keeps under a key (stored completions and responses, fine-tuning
// jobs, vector stores, uploads, ...) would show one client what another
// made, so in proxy-held-key mode the OpenAI face passes on nothing else
// but the Files and Batches APIs, whose objects it tracks by owner.
func openAIShared(method, path string) bool {
	return method == http.MethodGet && (path == "/v1/models" || strings.HasPrefix(path, "/v1/models/"))
}

// serveOpenAIOwned serves the Files and Batches APIs of the OpenAI face in
// proxy-held-key mode for the client named client (r's path is already
// the upstream one): an upload or a batch create records what it made as
// the client's (a batch only of a file of the client's), a list shows only
// the client's, and a call about one file or batch reaches upstream only
// if the client owns it, else 404 as for an unknown id. The output and
// error files of a client's batch become the client's when the batch is
// read or cancelled through the proxy.
func (s *Server) serveOpenAIOwned(w http.ResponseWriter, r *http.Request, client string) {
	kind, rest, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/v1/"), "/")
	if rest == "" {
		switch {
		case r.Method == http.MethodPost:
			s.openAICreate(w, r, client, kind)
		case r.Method == http.MethodGet:
			s.openAIList(w, r, client, kind)
		default:
			fullDuplex(w)
			s.openAIRP.ServeHTTP(w, r) // a method the API refuses
		}
		return
	}
	id, _, _ := strings.Cut(rest, "/")
	if r.URL.EscapedPath() != r.URL.Path || id == "" || id == "." || id == ".." || strings.Contains(rest, "/./") ||
		strings.Contains(rest, "/../") || strings.HasSuffix(rest, "/.") || strings.HasSuffix(rest, "/..") {
		openAINotFound(w, kind, id)
		return
	}
	if !s.ownsOpenAI(w, r, client, kind, id) {
		return
	}
	if kind == "batches" && (r.Method == http.MethodGet || r.Method == http.MethodPost) {
		r.Header.Del("Accept-Encoding") // read here: plain, please
		rec := newRecorder()
		s.openAIRP.ServeHTTP(rec, r)
		if rec.status == http.StatusOK && !s.recordBatchFiles(w, r, client, rec.body.Bytes()) {
			return
		}
		rec.writeTo(w, rec.body.Bytes())
		return
	}
	fullDuplex(w)
	s.openAIRP.ServeHTTP(w, r)
}

// ownsOpenAI reports whether client owns the file or batch id, answering
// 404 (or 500 if the owner cannot be read) when it does not.
func (s *Server) ownsOpenAI(w http.ResponseWriter, r *http.Request, client, kind, id string) bool {
	owned, err := s.ownedBy(r.Context(), id, client)
	switch {
	case err != nil:
		s.openAIStateError(w, r, "owner lookup failed", err)
	case !owned:
		openAINotFound(w, kind, id)
	}
	return owned
}

func openAINotFound(w http.ResponseWriter, kind, id string) {
	if kind == "files" {
		writeOpenAIError(w, http.StatusNotFound, "invalid_request_error", "", "id", "No such File object: "+id)
		return
	}
	writeOpenAIError(w, http.StatusNotFound, "invalid_request_error", "", "", "No batch found with id '"+id+"'.")
}

func (s *Server) openAIStateError(w http.ResponseWriter, r *http.Request, msg string, err error) {
	if r.Context().Err() == nil {
		s.log.Warn(msg, "path", r.URL.Path, "err", err)
	}
	writeOpenAIError(w, http.StatusInternalServerError, "server_error", "", "", "llmfleet could not read or write its state.")
}

// openAICreate passes an upload or a batch create upstream and records
// what it made as the client's before answering. A batch create naming
// an input file that is not the client's is answered 404 at once.
func (s *Server) openAICreate(w http.ResponseWriter, r *http.Request, client, kind string) {
	if kind == "batches" {
		body, e := s.readBody(r)
		if e != nil {
			writeOpenAIError(w, e.status, "invalid_request_error", "", "", e.msg)
			return
		}
		var req struct {
			InputFileID string `json:"input_file_id"`
		}
		if json.Unmarshal(body, &req) == nil && req.InputFileID != "" && !s.ownsOpenAI(w, r, client, "files", req.InputFileID) {
			return
		}
		r.Body = readCloser{bytes.NewReader(body), http.NoBody}
		r.ContentLength = int64(len(body))
	}
	r.Header.Del("Accept-Encoding")
	rec := newRecorder()
	s.openAIRP.ServeHTTP(rec, r)
	if rec.status == http.StatusOK {
		id := idOf(rec.body.Bytes())
		if id == "" {
			writeOpenAIError(w, http.StatusBadGateway, "api_error", "", "", "llmfleet could not read the upstream's answer.")
			return
		}
		if err := s.batchOwners.RecordBatchOwner(context.WithoutCancel(r.Context()), id, client); err != nil {
			s.openAIStateError(w, r, "owner of "+kind+" "+id+" not recorded", err)
			return
		}
		if kind == "batches" && !s.recordBatchFiles(w, r, client, rec.body.Bytes()) {
			return
		}
	}
	rec.writeTo(w, rec.body.Bytes())
}

// recordBatchFiles records the output and error files a batch object of
// the client's names as the client's; false means it answered an error.
func (s *Server) recordBatchFiles(w http.ResponseWriter, r *http.Request, client string, batch []byte) bool {
	var b struct {
		OutputFileID *string `json:"output_file_id"`
		ErrorFileID  *string `json:"error_file_id"`
	}
	json.Unmarshal(batch, &b)
	for _, f := range []*string{b.OutputFileID, b.ErrorFileID} {
		if f == nil || *f == "" {
			continue
		}
		if err := s.batchOwners.RecordBatchOwner(context.WithoutCancel(r.Context()), *f, client); err != nil {
			s.openAIStateError(w, r, "owner of a batch's file not recorded", err)
			return false
		}
	}
	return true
}

// openAIList answers a list of files or batches with the client's own
// only, paging upstream from the client's after cursor (which must be one
// of its own) in pages of 100, at most maxListCalls of them, until it has
// the client's limit or the list ends. first_id and last_id are those of
// the page answered; other clients' ids are never shown.
func (s *Server) openAIList(w http.ResponseWriter, r *http.Request, client, kind string) {
	q := r.URL.Query()
	limit := 20
	if kind == "files" {
		limit = 10000
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > limit {
			writeOpenAIError(w, http.StatusBadRequest, "invalid_request_error", "", "limit", "limit must be between 1 and "+strconv.Itoa(limit)+".")
			return
		}
		limit = n
	}
	after := q.Get("after")
	if after != "" {
		if owned, err := s.ownedBy(r.Context(), after, client); !owned {
			if err != nil {
				s.openAIStateError(w, r, "owner lookup failed", err)
				return
			}
			writeOpenAIError(w, http.StatusBadRequest, "invalid_request_error", "", "after", strconv.Quote(after)+" is not a valid cursor.")
			return
		}
	}
	r.Header.Del("Accept-Encoding")
	var kept []json.RawMessage
	hasMore := false
	var last *recorder
	for range maxListCalls {
		uq := url.Values{"limit": {"100"}}
		for _, k := range []string{"purpose", "order"} {
			if v := q.Get(k); v != "" {
				uq.Set(k, v)
			}
		}
		if after != "" {
			uq.Set("after", after)
		}
		rec := fetchWith(s.openAIRP, r, uq)
		last = rec
		if rec.status != http.StatusOK {
			rec.writeTo(w, rec.body.Bytes())
			return
		}
		var page struct {
			Data    []json.RawMessage `json:"data"`
			HasMore bool              `json:"has_more"`
		}
		if err := json.Unmarshal(rec.body.Bytes(), &page); err != nil {
			s.log.Warn("unreadable list from the OpenAI upstream", "err", err)
			writeOpenAIError(w, http.StatusBadGateway, "api_error", "", "", "llmfleet could not read the upstream's answer.")
			return
		}
		for _, item := range page.Data {
			owned, err := s.ownedBy(r.Context(), idOf(item), client)
			if err != nil {
				s.openAIStateError(w, r, "owner lookup failed", err)
				return
			}
			if owned {
				kept = append(kept, item)
			}
		}
		hasMore = page.HasMore
		if len(kept) >= limit || !page.HasMore || len(page.Data) == 0 {
			break
		}
		after = idOf(page.Data[len(page.Data)-1])
	}
	if len(kept) > limit {
		kept, hasMore = kept[:limit], true
	}
	out := struct {
		Object  string            `json:"object"`
		Data    []json.RawMessage `json:"data"`
		FirstID *string           `json:"first_id"`
		LastID  *string           `json:"last_id"`
		HasMore bool              `json:"has_more"`
	}{Object: "list", Data: kept, HasMore: hasMore}
	if out.Data == nil {
		out.Data, out.HasMore = []json.RawMessage{}, false
	}
	if len(kept) > 0 {
		first, lastID := idOf(kept[0]), idOf(kept[len(kept)-1])
		out.FirstID, out.LastID = &first, &lastID
	}
	body, _ := json.Marshal(out)
	last.writeTo(w, body)
}
