package observe

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestErrorCounter(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/typed":
			w.WriteHeader(529)
			io.WriteString(w, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
		case "/plain":
			w.WriteHeader(502)
			io.WriteString(w, "bad gateway")
		default:
			io.WriteString(w, "fine")
		}
	}))
	defer up.Close()
	var kinds []string
	c := &http.Client{Transport: &ErrorCounter{Count: func(k string) { kinds = append(kinds, k) }}}
	for _, path := range []string{"/typed", "/plain", "/ok"} {
		resp, err := c.Get(up.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if path == "/typed" && !strings.Contains(string(body), "overloaded_error") {
			t.Fatalf("body not passed on: %s", body)
		}
	}
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	if _, err := c.Get(dead.URL); err == nil {
		t.Fatal("no error")
	}
	if got := strings.Join(kinds, ","); got != "overloaded_error,http_502,network" {
		t.Fatalf("kinds %s", got)
	}
}
