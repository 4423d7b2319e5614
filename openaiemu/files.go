package openaiemu

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// file is an uploaded or generated file.
type file struct {
	ID        string
	Owner     string // the key and project that own it
	Filename  string
	Purpose   string
	CreatedAt time.Time
	ExpiresAt time.Time // zero: never
	Content   []byte
}

// fileObject is the API's OpenAIFile.
type fileObject struct {
	ID            string  `json:"id"`
	Object        string  `json:"object"`
	Bytes         int     `json:"bytes"`
	CreatedAt     int64   `json:"created_at"`
	ExpiresAt     *int64  `json:"expires_at"`
	Filename      string  `json:"filename"`
	Purpose       string  `json:"purpose"`
	Status        string  `json:"status"`
	StatusDetails *string `json:"status_details"`
}

func (f *file) object() fileObject {
	o := fileObject{ID: f.ID, Object: "file", Bytes: len(f.Content), CreatedAt: f.CreatedAt.Unix(),
		Filename: f.Filename, Purpose: f.Purpose, Status: "processed"}
	if !f.ExpiresAt.IsZero() {
		at := f.ExpiresAt.Unix()
		o.ExpiresAt = &at
	}
	return o
}

// MaxBatchFileBytes is the largest batch input file (200 MB).
const MaxBatchFileBytes = 200 << 20

// filePurposes are the purposes an upload may name.
var filePurposes = []string{"assistants", "batch", "fine-tune", "vision", "user_data", "evals"}

// owner names who a request is made for: its key and project.
func owner(r *http.Request) string {
	key, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return key + "\x00" + r.Header.Get("OpenAI-Project")
}

// uploadFile serves POST /v1/files (multipart/form-data: file, purpose,
// expires_after[anchor], expires_after[seconds]).
func (s *Server) uploadFile(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, MaxBatchFileBytes+1<<20)
	if err := r.ParseMultipartForm(32 << 20); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "", "file", "Could not parse multipart form: "+err.Error())
		return
	}
	purpose := r.FormValue("purpose")
	if !slices.Contains(filePurposes, purpose) {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "", "purpose", "Invalid value for 'purpose': '"+purpose+"'.")
		return
	}
	fh, hdr, err := r.FormFile("file")
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "", "file", "Missing required parameter: 'file'.")
		return
	}
	defer fh.Close()
	content, err := io.ReadAll(fh)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "", "file", "Could not read the file.")
		return
	}
	if purpose == "batch" && (!strings.HasSuffix(hdr.Filename, ".jsonl") || len(content) > MaxBatchFileBytes) {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "", "file",
			"Batch input files must be .jsonl files of at most 200 MB.")
		return
	}
	now := s.now()
	f := &file{Owner: owner(r), Filename: hdr.Filename, Purpose: purpose, CreatedAt: now, Content: content}
	if purpose == "batch" {
		f.ExpiresAt = now.Add(30 * 24 * time.Hour)
	}
	if v := r.FormValue("expires_after[seconds]"); v != "" {
		secs, err := strconv.Atoi(v)
		if err != nil || secs < 3600 || secs > 2592000 || r.FormValue("expires_after[anchor]") != "created_at" {
			writeError(w, http.StatusBadRequest, "invalid_request_error", "", "expires_after",
				"expires_after needs anchor 'created_at' and seconds between 3600 and 2592000.")
			return
		}
		f.ExpiresAt = now.Add(time.Duration(secs) * time.Second)
	}
	s.mu.Lock()
	f.ID = s.newIDLocked("file-")
	s.filesLocked()[f.ID] = f
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, f.object())
}

// newIDLocked returns a fresh id with prefix.
func (s *Server) newIDLocked(prefix string) string {
	s.seq++
	return prefix + hashID("", strconv.Itoa(s.seq), s.now().String())[:24]
}

func (s *Server) filesLocked() map[string]*file {
	if s.files == nil {
		s.files = map[string]*file{}
	}
	return s.files
}

// fileOf returns the caller's file named in the path, or answers 404.
func (s *Server) fileOf(w http.ResponseWriter, r *http.Request) *file {
	s.mu.Lock()
	f := s.filesLocked()[r.PathValue("id")]
	s.mu.Unlock()
	if f == nil || f.Owner != owner(r) || (!f.ExpiresAt.IsZero() && !s.now().Before(f.ExpiresAt)) {
		writeError(w, http.StatusNotFound, "invalid_request_error", "", "id", fmt.Sprintf("No such File object: %s", r.PathValue("id")))
		return nil
	}
	return f
}

func (s *Server) getFile(w http.ResponseWriter, r *http.Request) {
	if f := s.fileOf(w, r); f != nil {
		writeJSON(w, http.StatusOK, f.object())
	}
}

func (s *Server) fileContent(w http.ResponseWriter, r *http.Request) {
	if f := s.fileOf(w, r); f != nil {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", strconv.Itoa(len(f.Content)))
		w.Write(f.Content)
	}
}

func (s *Server) deleteFile(w http.ResponseWriter, r *http.Request) {
	f := s.fileOf(w, r)
	if f == nil {
		return
	}
	s.mu.Lock()
	delete(s.files, f.ID)
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"id": f.ID, "object": "file", "deleted": true})
}

// listFiles serves GET /v1/files (purpose, limit 1-10000, order, after).
func (s *Server) listFiles(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit := 10000
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 10000 {
			writeError(w, http.StatusBadRequest, "invalid_request_error", "", "limit", "limit must be between 1 and 10000.")
			return
		}
		limit = n
	}
	me, now := owner(r), s.now()
	s.mu.Lock()
	var fs []*file
	for _, f := range s.filesLocked() {
		if f.Owner == me && (q.Get("purpose") == "" || f.Purpose == q.Get("purpose")) && (f.ExpiresAt.IsZero() || now.Before(f.ExpiresAt)) {
			fs = append(fs, f)
		}
	}
	s.mu.Unlock()
	asc := q.Get("order") == "asc"
	slices.SortFunc(fs, func(a, b *file) int {
		c := a.CreatedAt.Compare(b.CreatedAt)
		if c == 0 {
			c = strings.Compare(a.ID, b.ID)
		}
		if !asc {
			c = -c
		}
		return c
	})
	objs := make([]fileObject, 0, len(fs))
	for _, f := range fs {
		objs = append(objs, f.object())
	}
	writeList(w, page(objs, q.Get("after"), limit, func(o fileObject) string { return o.ID }))
}

// listPage is one page of a list.
type listPage[T any] struct {
	Data    []T
	HasMore bool
}

// page returns the items after the one with id after (all if empty), at
// most limit.
func page[T any](items []T, after string, limit int, id func(T) string) listPage[T] {
	if after != "" {
		i := slices.IndexFunc(items, func(t T) bool { return id(t) == after })
		items = items[i+1:] // i == -1: all
	}
	more := len(items) > limit
	if more {
		items = items[:limit]
	}
	return listPage[T]{Data: items, HasMore: more}
}

// writeList writes a page as the API's list object.
func writeList[T any](w http.ResponseWriter, p listPage[T]) {
	var first, last *string
	if len(p.Data) > 0 {
		f, l := idOf(p.Data[0]), idOf(p.Data[len(p.Data)-1])
		first, last = &f, &l
	}
	if p.Data == nil {
		p.Data = []T{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": p.Data, "first_id": first, "last_id": last, "has_more": p.HasMore})
}

// idOf returns the id of a listed object.
func idOf(v any) string {
	switch o := v.(type) {
	case fileObject:
		return o.ID
	case batchObject:
		return o.ID
	}
	return ""
}
