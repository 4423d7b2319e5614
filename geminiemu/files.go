package geminiemu

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/llmfleet/llmfleet/geminiwire"
)

// fileLifetime is how long the API keeps a file.
const fileLifetime = 48 * time.Hour

// file is an uploaded or generated file.
type file struct {
	id, owner, displayName, mimeType, source string
	created                                  time.Time
	content                                  []byte
}

// upload is a resumable upload begun and not finalized.
type upload struct {
	owner, displayName, mimeType string
	content                      []byte
}

// fileObject is the API's File.
type fileObject struct {
	Name           string    `json:"name"`
	DisplayName    string    `json:"displayName,omitempty"`
	MIMEType       string    `json:"mimeType"`
	SizeBytes      string    `json:"sizeBytes"`
	CreateTime     time.Time `json:"createTime"`
	UpdateTime     time.Time `json:"updateTime"`
	ExpirationTime time.Time `json:"expirationTime"`
	SHA256Hash     string    `json:"sha256Hash"`
	URI            string    `json:"uri"`
	DownloadURI    string    `json:"downloadUri,omitempty"`
	State          string    `json:"state"`
	Source         string    `json:"source"`
}

func (f *file) object(base string) fileObject {
	h := sha256.Sum256(f.content)
	o := fileObject{Name: "files/" + f.id, DisplayName: f.displayName, MIMEType: f.mimeType,
		SizeBytes: strconv.Itoa(len(f.content)), CreateTime: f.created, UpdateTime: f.created,
		ExpirationTime: f.created.Add(fileLifetime), SHA256Hash: base64.StdEncoding.EncodeToString([]byte(hex.EncodeToString(h[:]))),
		URI: base + "/v1beta/files/" + f.id, State: "ACTIVE", Source: f.source}
	if f.source == "GENERATED" {
		o.DownloadURI = base + "/download/v1beta/files/" + f.id + ":download?alt=media"
	}
	return o
}

func hashed(parts ...string) string {
	h := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(h[:])
}

// baseURL is the URL the API is served at for r: the scheme and host it
// came to, and the prefix a handler mounting the emulator under a path
// (http.StripPrefix) took off, read from the request line.
func baseURL(r *http.Request) string {
	scheme := "http://"
	if r.TLS != nil {
		scheme = "https://"
	}
	prefix := ""
	if u, err := url.ParseRequestURI(r.RequestURI); err == nil && strings.HasSuffix(u.Path, r.URL.Path) {
		prefix = strings.TrimSuffix(u.Path, r.URL.Path)
	}
	return scheme + r.Host + prefix
}

func (s *Server) addFileLocked(f *file) {
	if s.files == nil {
		s.files = map[string]*file{}
	}
	s.files[f.id] = f
}

// uploadFile serves POST /upload/v1beta/files: the start of a resumable
// upload (X-Goog-Upload-Command: start, body {"file": {...}}), which
// answers the upload URL, and the chunks sent to it (?upload_id=;
// commands upload, finalize or both; the final one answers {"file"}).
func (s *Server) uploadFile(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("X-Goog-Upload-Protocol") == "resumable" && r.Header.Get("X-Goog-Upload-Command") == "start" {
		s.startUpload(w, r)
		return
	}
	id := r.URL.Query().Get("upload_id")
	s.mu.Lock()
	u := s.uploads[id]
	s.mu.Unlock()
	if u == nil || u.owner != apiKey(r) {
		writeError(w, http.StatusNotFound, "No upload session "+id+".")
		return
	}
	chunk, err := io.ReadAll(io.LimitReader(r.Body, geminiwire.MaxFileBytes+1))
	cmd := r.Header.Get("X-Goog-Upload-Command")
	off, _ := strconv.Atoi(r.Header.Get("X-Goog-Upload-Offset"))
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil || off != len(u.content) || len(u.content)+len(chunk) > geminiwire.MaxFileBytes {
		w.Header().Set("X-Goog-Upload-Status", "active")
		writeError(w, http.StatusBadRequest, "The upload offset or size is not valid.")
		return
	}
	u.content = append(u.content, chunk...)
	if !strings.Contains(cmd, "finalize") {
		w.Header().Set("X-Goog-Upload-Status", "active")
		w.WriteHeader(http.StatusOK)
		return
	}
	delete(s.uploads, id)
	s.seq++
	f := &file{id: "f" + strconv.Itoa(s.seq) + hashed(u.owner, string(u.content))[:10], owner: u.owner,
		displayName: u.displayName, mimeType: u.mimeType, source: "UPLOADED", created: s.now(), content: u.content}
	s.addFileLocked(f)
	w.Header().Set("X-Goog-Upload-Status", "final")
	writeJSON(w, http.StatusOK, map[string]fileObject{"file": f.object(baseURL(r))})
}

func (s *Server) startUpload(w http.ResponseWriter, r *http.Request) {
	var req struct {
		File struct {
			DisplayName string `json:"displayName"`
			MIMEType    string `json:"mimeType"`
		} `json:"file"`
	}
	if b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20)); len(b) > 0 && json.Unmarshal(b, &req) != nil {
		writeError(w, http.StatusBadRequest, "Invalid JSON payload received.")
		return
	}
	mime := req.File.MIMEType
	if mime == "" {
		mime = r.Header.Get("X-Goog-Upload-Header-Content-Type")
	}
	s.mu.Lock()
	s.seq++
	id := "u" + strconv.Itoa(s.seq) + hashed(apiKey(r), s.now().String())[:16]
	if s.uploads == nil {
		s.uploads = map[string]*upload{}
	}
	s.uploads[id] = &upload{owner: apiKey(r), displayName: req.File.DisplayName, mimeType: mime}
	s.mu.Unlock()
	w.Header().Set("X-Goog-Upload-Url", baseURL(r)+"/upload/v1beta/files?upload_id="+id+"&upload_protocol=resumable")
	w.Header().Set("X-Goog-Upload-Status", "active")
	w.WriteHeader(http.StatusOK)
}

// fileOf returns the caller's file id, or answers 403 as the API does for
// a file that is not there or not the caller's.
func (s *Server) fileOf(w http.ResponseWriter, r *http.Request, id string) *file {
	s.mu.Lock()
	f := s.files[id]
	s.mu.Unlock()
	if f == nil || f.owner != apiKey(r) {
		writeError(w, http.StatusForbidden, "You do not have permission to access the File "+id+" or it may not exist.")
		return nil
	}
	return f
}

// getFile serves GET /v1beta/files/{id}, and {id}:download as the
// download.
func (s *Server) getFile(w http.ResponseWriter, r *http.Request) {
	if strings.HasSuffix(r.PathValue("id"), ":download") {
		s.downloadFile(w, r)
		return
	}
	if f := s.fileOf(w, r, r.PathValue("id")); f != nil {
		writeJSON(w, http.StatusOK, f.object(baseURL(r)))
	}
}

// downloadFile serves {id}:download?alt=media: the file's bytes.
func (s *Server) downloadFile(w http.ResponseWriter, r *http.Request) {
	id, ok := strings.CutSuffix(r.PathValue("id"), ":download")
	if !ok || r.URL.Query().Get("alt") != "media" {
		writeError(w, http.StatusBadRequest, "Only alt=media downloads are supported.")
		return
	}
	if f := s.fileOf(w, r, id); f != nil {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", strconv.Itoa(len(f.content)))
		w.Write(f.content)
	}
}

// deleteFile serves DELETE /v1beta/files/{id}.
func (s *Server) deleteFile(w http.ResponseWriter, r *http.Request) {
	if f := s.fileOf(w, r, r.PathValue("id")); f != nil {
		s.mu.Lock()
		delete(s.files, f.id)
		s.mu.Unlock()
		writeJSON(w, http.StatusOK, struct{}{})
	}
}

// listFiles serves GET /v1beta/files: the caller's files, newest first
// (one page of at most 100).
func (s *Server) listFiles(w http.ResponseWriter, r *http.Request) {
	key := apiKey(r)
	s.mu.Lock()
	var fs []*file
	for _, f := range s.files {
		if f.owner == key {
			fs = append(fs, f)
		}
	}
	s.mu.Unlock()
	slices.SortFunc(fs, func(a, b *file) int {
		if c := b.created.Compare(a.created); c != 0 {
			return c
		}
		return strings.Compare(b.id, a.id)
	})
	out := struct {
		Files []fileObject `json:"files,omitempty"`
	}{}
	for i, f := range fs {
		if i == 100 {
			break
		}
		out.Files = append(out.Files, f.object(baseURL(r)))
	}
	writeJSON(w, http.StatusOK, out)
}
