package httprec

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestRecorderKeepsTheFirstStatus(t *testing.T) {
	r := New(nil)
	if r.Status() != 0 {
		t.Fatalf("status %d before anything", r.Status())
	}
	r.Header().Set("X-A", "1")
	r.Write([]byte("he"))
	r.WriteHeader(http.StatusTeapot) // after the body: ignored
	r.Write([]byte("llo"))
	if r.Status() != http.StatusOK || string(r.Body()) != "hello" || r.Header().Get("X-A") != "1" {
		t.Fatalf("%d %q %v", r.Status(), r.Body(), r.Header())
	}
	r = New(http.Header{"X-B": {"2"}})
	r.WriteHeader(http.StatusNotFound)
	r.WriteHeader(http.StatusOK)
	if r.Status() != http.StatusNotFound || r.Header().Get("X-B") != "2" {
		t.Fatalf("%d %v", r.Status(), r.Header())
	}
}

func TestReplay(t *testing.T) {
	r := New(nil)
	r.Header().Set("Content-Encoding", "gzip")
	r.Header().Set("Content-Length", "99")
	r.Header().Set("X-A", "1")
	r.WriteHeader(http.StatusCreated)
	r.Write([]byte("original"))
	w := httptest.NewRecorder()
	r.Replay(w, []byte("edited"))
	if w.Code != http.StatusCreated || w.Body.String() != "edited" || w.Header().Get("Content-Encoding") != "" ||
		w.Header().Get("Content-Length") != "6" || w.Header().Get("X-A") != "1" {
		t.Fatalf("%d %q %v", w.Code, w.Body, w.Header())
	}
	w = httptest.NewRecorder()
	New(nil).Replay(w, nil)
	if w.Code != http.StatusOK || w.Header().Get("Content-Length") != "0" {
		t.Fatalf("nothing recorded: %d %v", w.Code, w.Header())
	}
}
