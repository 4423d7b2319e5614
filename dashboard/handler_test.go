package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"
)

// newServer mounts the dashboard as the proxy does.
func newServer(t *testing.T, snapshot func(context.Context) (Snapshot, error)) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("/llmfleet/", Handler())
	mux.Handle("/llmfleet/v1/dashboard", SnapshotHandler(snapshot))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func get(t *testing.T, srv *httptest.Server, method, path string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(method, srv.URL+path, nil)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

func TestHandlerServesPageAndAssets(t *testing.T) {
	srv := newServer(t, nil)
	for _, c := range []struct {
		path, contentType, contains string
	}{
		{"/llmfleet/", "text/html; charset=utf-8", `<script src="app.js"`},
		{"/llmfleet/index.html", "text/html; charset=utf-8", `<link rel="stylesheet" href="app.css">`},
		{"/llmfleet/app.js", "text/javascript; charset=utf-8", `"v1/stats?period="`},
		{"/llmfleet/app.css", "text/css; charset=utf-8", `.kpi`},
	} {
		resp, body := get(t, srv, "GET", c.path)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != c.contentType {
			t.Errorf("GET %s: %d %q", c.path, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		if !strings.Contains(body, c.contains) {
			t.Errorf("GET %s: no %q", c.path, c.contains)
		}
		if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "connect-src 'self'") {
			t.Errorf("GET %s: CSP %q", c.path, csp)
		}
		if resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: no nosniff", c.path)
		}
	}
	if !strings.Contains(mustRead(t, "static/app.js"), `getJSON("v1/dashboard")`) {
		t.Error("the page does not poll v1/dashboard")
	}
	resp, _ := get(t, srv, "GET", "/llmfleet")
	if resp.StatusCode != 200 || resp.Request.URL.Path != "/llmfleet/" {
		t.Errorf("GET /llmfleet: %d at %s", resp.StatusCode, resp.Request.URL.Path)
	}
	if resp, _ := get(t, srv, "GET", "/llmfleet/nope.js"); resp.StatusCode != 404 {
		t.Errorf("unknown asset: %d", resp.StatusCode)
	}
	if resp, body := get(t, srv, "HEAD", "/llmfleet/app.css"); resp.StatusCode != 200 || body != "" || resp.Header.Get("Content-Type") != "text/css; charset=utf-8" {
		t.Errorf("HEAD: %d %q", resp.StatusCode, body)
	}
	// Other methods are refused.
	rec := httptest.NewRecorder()
	Handler().ServeHTTP(rec, httptest.NewRequest("POST", "/llmfleet/", nil))
	if rec.Code != 405 {
		t.Errorf("POST: %d", rec.Code)
	}
}

func mustRead(t *testing.T, name string) string {
	t.Helper()
	b, err := static.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestNoExternalURLs checks that nothing in the embedded assets points
// outside the proxy: no absolute or protocol-relative URL, no import.
func TestNoExternalURLs(t *testing.T) {
	relative := regexp.MustCompile(`(?i)(src|href|action)\s*=\s*["']?//|url\(\s*["']?//|@import|@font-face`)
	n := 0
	err := fs.WalkDir(static, "static", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		text := mustRead(t, path)
		if strings.HasPrefix(path, "static/vendor/") {
			if !servedFile(path) {
				return nil // the vendored library's LICENSE and README
			}
			// The library's banner comment names its home page; it
			// loads nothing from there.
			if strings.HasPrefix(text, "/*!") {
				if end := strings.Index(text, "*/"); end >= 0 {
					text = text[end+2:]
				}
			}
		}
		n++
		for _, bad := range []string{"http://", "https://", "ws://", "wss://"} {
			if i := strings.Index(strings.ToLower(text), bad); i >= 0 {
				t.Errorf("%s holds %q at %d: %.60s", path, bad, i, text[i:])
			}
		}
		if m := relative.FindString(text); m != "" {
			t.Errorf("%s loads from elsewhere: %q", path, m)
		}
		return nil
	})
	if err != nil || n != len(assets) {
		t.Errorf("walked %d files (%v), serve %d", n, err, len(assets))
	}
}

// servedFile reports whether an embedded file is one of the assets.
func servedFile(path string) bool {
	for _, a := range assets {
		if a.file == path {
			return true
		}
	}
	return false
}

func TestSnapshotHandler(t *testing.T) {
	at := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	srv := newServer(t, func(ctx context.Context) (Snapshot, error) {
		h := &History{}
		return h.Snapshot(at), nil
	})
	resp, body := get(t, srv, "GET", "/llmfleet/v1/dashboard")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("%d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"time", "bucket_seconds", "stats", "savings", "traffic", "queue", "turnaround", "batches_in_flight"} {
		if _, ok := m[k]; !ok {
			t.Errorf("no %q in %s", k, body)
		}
	}
	if resp, body := get(t, srv, "POST", "/llmfleet/v1/dashboard"); resp.StatusCode != 405 || !strings.Contains(body, `"invalid_request_error"`) {
		t.Errorf("POST: %d %s", resp.StatusCode, body)
	}

	failing := newServer(t, func(ctx context.Context) (Snapshot, error) { return Snapshot{}, errors.New("store closed") })
	resp, body = get(t, failing, "GET", "/llmfleet/v1/dashboard")
	var env struct {
		Type  string `json:"type"`
		Error struct{ Type, Message string }
	}
	if err := json.Unmarshal([]byte(body), &env); err != nil || resp.StatusCode != 500 || env.Type != "error" ||
		env.Error.Type != "api_error" || !strings.Contains(env.Error.Message, "store closed") {
		t.Errorf("hook error: %d %s", resp.StatusCode, body)
	}

	// A nil hook serves an empty snapshot.
	rec := httptest.NewRecorder()
	SnapshotHandler(nil).ServeHTTP(rec, httptest.NewRequest("GET", "/llmfleet/v1/dashboard", nil))
	if rec.Code != 200 || !json.Valid(rec.Body.Bytes()) {
		t.Errorf("nil hook: %d %s", rec.Code, rec.Body)
	}
}
