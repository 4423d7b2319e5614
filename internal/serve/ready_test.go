package serve

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestReadiness follows the gate from starting to ready to stopping.
func TestReadiness(t *testing.T) {
	rd := &readiness{}
	ts := httptest.NewServer(rd)
	defer ts.Close()
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get("/healthz"); code != 200 {
		t.Fatalf("starting: healthz %d", code)
	}
	for _, p := range []string{"/readyz", "/v1/models"} {
		if code, body := get(p); code != 503 || !strings.Contains(body, `"type":"overloaded_error"`) {
			t.Fatalf("starting: %s %d %s", p, code, body)
		}
	}
	rd.serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("proxy")) }))
	if code, body := get("/readyz"); code != 200 || !strings.Contains(body, "ready") {
		t.Fatalf("ready: %d %s", code, body)
	}
	if code, body := get("/v1/models"); code != 200 || body != "proxy" {
		t.Fatalf("ready: %d %s", code, body)
	}
	rd.stop()
	if code, _ := get("/readyz"); code != 503 {
		t.Fatalf("stopping: readyz %d", code)
	}
}
