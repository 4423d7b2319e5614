package httprec

import (
	"net/http"
	"testing"
)

func TestRecorder(t *testing.T) {
	var r Recorder
	if r.Status() != http.StatusOK || r.Body() != nil {
		t.Fatalf("nothing written: %d %q", r.Status(), r.Body())
	}
	r.Header().Set("X-A", "1")
	r.Write([]byte("he"))
	r.WriteHeader(http.StatusTeapot) // after the body: ignored
	r.Write([]byte("llo"))
	if r.Status() != http.StatusOK || string(r.Body()) != "hello" || r.Header().Get("X-A") != "1" {
		t.Fatalf("%d %q %v", r.Status(), r.Body(), r.Header())
	}
	var e Recorder
	e.WriteHeader(http.StatusNotFound)
	e.WriteHeader(http.StatusOK)
	e.Write([]byte("x"))
	if e.Status() != http.StatusNotFound || string(e.Body()) != "x" {
		t.Fatalf("%d %q", e.Status(), e.Body())
	}
}
