package ledgerread

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
)

func TestOpenSQLiteRefusesAMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nope.db")
	if _, err := OpenSQLite(t.Context(), path); err == nil || !strings.Contains(err.Error(), "no llmfleet database at "+path) {
		t.Fatalf("err %v", err)
	}
	if _, err := FromDB(t.Context(), path, "24h", "", "", nil); err == nil || !strings.Contains(err.Error(), "no llmfleet database") {
		t.Fatalf("FromDB: %v", err)
	}
}

func TestFromURL(t *testing.T) {
	var query string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		query = r.URL.Path + "?" + r.URL.RawQuery
		if r.URL.Query().Get("since") == "bad" {
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"type":"error","error":{"type":"invalid_request_error","message":"since: no"}}`))
			return
		}
		w.Write([]byte(`{}`))
	}))
	defer ts.Close()
	if _, err := FromURL(t.Context(), ts.URL+"/", "24h", "", ""); err != nil || query != "/llmfleet/v1/stats?since=24h" {
		t.Fatalf("%q, %v", query, err)
	}
	if _, err := FromURL(t.Context(), ts.URL, "", "2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z"); err != nil || !strings.Contains(query, "from=") || !strings.Contains(query, "to=") {
		t.Fatalf("%q, %v", query, err)
	}
	if _, err := FromURL(t.Context(), ts.URL, "bad", "", ""); err == nil || !strings.HasSuffix(err.Error(), "400 Bad Request: since: no") {
		t.Fatalf("err %v", err)
	}
}
